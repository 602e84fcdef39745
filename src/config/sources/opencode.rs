//! opencode: the `mcp` entries of `opencode.json` / `opencode.jsonc` in the project
//! (`<cwd>/opencode.json(c)`, then `<cwd>/.opencode/opencode.json(c)`) and of the user's
//! `~/.config/opencode/opencode.json(c)`, project first (opencode's precedence).
//!
//! `type: "local"`: `command` is an array (program and arguments), `environment` the
//! environment; `type: "remote"`: `url`, `headers`; both: `enabled` (default true), `timeout`
//! (ms). `{env:NAME}` is replaced by the variable's value (empty when unset, as in opencode);
//! `{file:...}` is not read and stays as written. The newer shape, servers under
//! `mcp.servers` with `disabled`, is read too.

use serde_json::{Map, Value};

use super::{plain_entry, read_json};
use crate::config::expand::{expand_braced_env_value, process_env};
use crate::config::server::ServerConfig;
use crate::config::source::{ConfigSource, DiscoveryContext, Level, SourceOutput};

/// opencode's config files.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenCode;

fn convert(mut entry: Value) -> Result<ServerConfig, String> {
    expand_braced_env_value(&mut entry, &process_env);
    let Some(obj) = entry.as_object() else {
        return Err("the server entry is not an object".into());
    };
    let mut out = Map::new();
    match obj.get("type").and_then(Value::as_str) {
        Some("local") => {
            out.insert("type".into(), "stdio".into());
            match obj.get("command") {
                Some(Value::Array(argv)) => {
                    let mut argv = argv.iter();
                    if let Some(cmd) = argv.next() {
                        out.insert("command".into(), cmd.clone());
                    }
                    out.insert("args".into(), Value::Array(argv.cloned().collect()));
                }
                Some(Value::String(cmd)) => {
                    out.insert("command".into(), cmd.clone().into());
                }
                _ => return Err("a local server needs \"command\" (an array)".into()),
            }
            if let Some(env) = obj.get("environment") {
                out.insert("env".into(), env.clone());
            }
        }
        Some("remote") => {
            if let Some(url) = obj.get("url") {
                out.insert("url".into(), url.clone());
            }
            if let Some(h) = obj.get("headers") {
                out.insert("headers".into(), h.clone());
            }
        }
        Some(other) => return Err(format!("unknown server type \"{other}\"")),
        None => return Err("\"type\" is required (local or remote)".into()),
    }
    for key in ["enabled", "disabled", "timeout"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    plain_entry(Value::Object(out))
}

fn load_file(out: &mut SourceOutput, path: &std::path::Path, level: Level) {
    let Some(root) = read_json(out, path) else {
        return;
    };
    let Some(mcp) = root.get("mcp") else {
        return;
    };
    let v2 = mcp
        .get("servers")
        .and_then(Value::as_object)
        .filter(|s| !s.contains_key("type"));
    let servers = match v2 {
        Some(servers) => servers,
        None => match mcp.as_object() {
            Some(m) => m,
            None => return out.warn(path, "\"mcp\" is not an object"),
        },
    };
    for (name, entry) in servers {
        out.entry(name, path, level, convert(entry.clone()));
    }
}

impl ConfigSource for OpenCode {
    fn id(&self) -> &str {
        "opencode"
    }

    fn display_name(&self) -> &str {
        "opencode"
    }

    fn load(&self, ctx: &DiscoveryContext) -> SourceOutput {
        let mut out = SourceOutput::default();
        let user = ctx.config_dir.join("opencode");
        for (dir, level) in [
            (ctx.cwd.clone(), Level::Project),
            (ctx.cwd.join(".opencode"), Level::Project),
            (user, Level::User),
        ] {
            for file in ["opencode.json", "opencode.jsonc"] {
                load_file(&mut out, &dir.join(file), level);
            }
        }
        out
    }
}
