//! A server config's sandbox (`sandboxEnabled`, `sandbox`: VS Code's names and shape) as the
//! transport's [`Sandbox`] rules: paths resolved (`~/`, `${userHome}`, `${workspaceFolder}`, a
//! relative path against the project), domains kept as written. A key the sandbox does not
//! know, or a value of the wrong type, is an error that keeps the server from starting: a rule
//! the user meant and we cannot read must not turn into a looser sandbox.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::server::ServerConfig;
use crate::error::Error;
use crate::transport::Sandbox;

/// The keys of `sandbox`, and of its two objects.
const FILESYSTEM: &[&str] = &["allowWrite", "denyRead", "denyWrite"];
const NETWORK: &[&str] = &["allowedDomains", "deniedDomains"];

/// Whether the config asks for the sandbox.
pub(crate) fn enabled(config: &ServerConfig) -> bool {
    config.sandbox_enabled == Some(true)
}

/// What is wrong with the config's sandbox settings, one message each (empty when nothing).
pub(crate) fn problems(name: &str, config: &ServerConfig) -> Vec<String> {
    let mut out = Vec::new();
    if enabled(config) && config.command.is_none() && config.url.is_some() {
        out.push(format!(
            "Server \"{name}\": \"sandboxEnabled\" applies to stdio servers only (this one runs elsewhere)"
        ));
    }
    if let Some(sandbox) = &config.sandbox {
        if let Err(why) = read(sandbox) {
            out.push(format!("Server \"{name}\": \"sandbox\": {why}"));
        }
    }
    out
}

/// The rules as written: `(allowWrite, denyRead, denyWrite, allowedDomains, deniedDomains)`.
type Written = [Vec<String>; 5];

fn read(sandbox: &Value) -> Result<Written, String> {
    let root = sandbox.as_object().ok_or("is not an object")?;
    let mut out: Written = Default::default();
    for (key, value) in root {
        let (names, at) = match key.as_str() {
            "filesystem" => (FILESYSTEM, 0),
            "network" => (NETWORK, 3),
            other => return Err(format!("unknown key \"{other}\" (filesystem, network)")),
        };
        let object = value
            .as_object()
            .ok_or_else(|| format!("\"{key}\" is not an object"))?;
        for (inner, list) in object {
            let index = names
                .iter()
                .position(|n| n == inner)
                .ok_or_else(|| format!("unknown key \"{key}.{inner}\" ({})", names.join(", ")))?;
            out[at + index] = list
                .as_array()
                .and_then(|items| {
                    items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                })
                .ok_or_else(|| format!("\"{key}.{inner}\" is not a list of strings"))?;
        }
    }
    Ok(out)
}

/// The sandbox the server runs in (`None`: it asks for none), its paths resolved against
/// `project_dir` and the user's home.
pub(crate) fn rules(config: &ServerConfig, project_dir: &Path) -> Result<Option<Sandbox>, Error> {
    if !enabled(config) {
        return Ok(None);
    }
    let written = match &config.sandbox {
        Some(sandbox) => read(sandbox).map_err(|why| Error::Config {
            message: format!("\"sandbox\": {why}"),
        })?,
        None => Written::default(),
    };
    let home = Some(crate::files::home_dir()).filter(|h| !h.as_os_str().is_empty());
    let path = |p: &String| resolve(p, project_dir, home.as_deref());
    let [allow_write, deny_read, deny_write, allowed_domains, denied_domains] = written;
    Ok(Some(Sandbox {
        allow_write: allow_write.iter().map(path).collect(),
        deny_read: deny_read.iter().map(path).collect(),
        deny_write: deny_write.iter().map(path).collect(),
        allowed_domains,
        denied_domains,
    }))
}

/// One path: the variables VS Code defines for it, `~`, and a relative path under the project.
fn resolve(written: &str, project: &Path, home: Option<&Path>) -> PathBuf {
    let home_text = home.map(|h| h.display().to_string()).unwrap_or_default();
    let text = written
        .trim()
        .replace("${workspaceFolder}", &project.display().to_string())
        .replace("${userHome}", &home_text);
    let path = match (text.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => home.join(&rest[1..]),
        _ => PathBuf::from(&text),
    };
    let path = if path.is_absolute() {
        path
    } else {
        project.join(path)
    };
    lexical(&path)
}

/// `path` without `.` and `..` (resolved by name, as a person reads them).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(v: Value) -> ServerConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn vs_codes_shape_becomes_the_rules() {
        let c = config(json!({
            "command": "node", "sandboxEnabled": true,
            "sandbox": {
                "filesystem": {"allowWrite": ["${workspaceFolder}/out", "data/../cache"],
                               "denyRead": ["~/.ssh", "${userHome}/.aws"]},
                "network": {"allowedDomains": ["*.example.com"]}
            }
        }));
        let home = crate::files::home_dir();
        let rules = rules(&c, Path::new("/p")).unwrap().unwrap();
        assert_eq!(
            rules.allow_write,
            [PathBuf::from("/p/out"), PathBuf::from("/p/cache")]
        );
        assert_eq!(rules.deny_read, [home.join(".ssh"), home.join(".aws")]);
        assert_eq!(rules.allowed_domains, ["*.example.com"]);
        assert!(rules.deny_write.is_empty() && rules.denied_domains.is_empty());
        assert!(problems("s", &c).is_empty());
    }

    #[test]
    fn without_sandbox_enabled_there_is_none_and_alone_it_is_the_strictest() {
        let off = config(json!({"command": "x", "sandbox": {"network": {}}}));
        assert_eq!(rules(&off, Path::new("/p")).unwrap(), None);
        let bare = config(json!({"command": "x", "sandboxEnabled": "true"}));
        assert_eq!(
            rules(&bare, Path::new("/p")).unwrap(),
            Some(Sandbox::default())
        );
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_errors() {
        for (sandbox, says) in [
            (
                json!({"filesystem": {"allowRead": []}}),
                "filesystem.allowRead",
            ),
            (json!({"proxy": {}}), "\"proxy\""),
            (
                json!({"network": {"allowedDomains": "a.com"}}),
                "not a list",
            ),
            (json!([]), "not an object"),
        ] {
            let c = config(json!({"command": "x", "sandboxEnabled": true, "sandbox": sandbox}));
            let p = problems("s", &c);
            assert!(p.len() == 1 && p[0].contains(says), "{p:?}");
            assert!(rules(&c, Path::new("/p")).is_err());
        }
        let remote = config(json!({"url": "https://x/mcp", "sandboxEnabled": true}));
        assert!(problems("r", &remote)[0].contains("stdio servers only"));
    }
}
