//! A server given on the command line instead of a config: `mcp tools -- npx -y SERVER`
//! (stdio, with `--env K=V`) or `mcp tools --url URL` (Streamable HTTP, falling back to legacy
//! SSE as a config's bare URL does, with `--header K:V`). It is the user's own server (no
//! approval), named after what it runs, so its tools are `mcp_<name>_<tool>` and callable by
//! their own names too.

use mcp_runtime::config::ServerConfig;

/// Launchers whose first operand, not themselves, names the server.
const LAUNCHERS: [&str; 10] = [
    "npx", "bunx", "pnpx", "uvx", "pipx", "node", "deno", "python", "python3", "uv",
];

/// The config (and name) of the server `argv` starts, or `url` serves.
/// `--ca-file`, `--client-cert` and `--client-key`: the TLS files of a URL given on the
/// command line, made absolute against the current directory (as a shell user means them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlTls {
    pub ca_file: Option<String>,
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
}

impl UrlTls {
    pub fn is_empty(&self) -> bool {
        self == &UrlTls::default()
    }

    /// Sets `flag`'s file.
    pub fn set(&mut self, flag: &str, file: String) {
        let file = match std::env::current_dir() {
            Ok(here) if !file.starts_with("~/") => here.join(file).display().to_string(),
            _ => file,
        };
        match flag {
            "--ca-file" => self.ca_file = Some(file),
            "--client-cert" => self.client_cert = Some(file),
            _ => self.client_key = Some(file),
        }
    }

    /// The same as paths, for an `HttpTarget`.
    pub fn paths(&self) -> [Option<std::path::PathBuf>; 3] {
        [&self.ca_file, &self.client_cert, &self.client_key].map(|f| f.as_ref().map(Into::into))
    }
}

/// `--sandbox`, `--allow-write`, `--deny-read`, `--allow-domain`: the sandbox of a command
/// given on the command line, as a config's `sandbox` (paths absolute against the current
/// directory, as a shell user means them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxFlags(pub serde_json::Value);

impl SandboxFlags {
    /// The flags, or `None` when none was given.
    pub fn read(
        on: bool,
        allow_write: Vec<String>,
        deny_read: Vec<String>,
        allow_domain: Vec<String>,
    ) -> Option<SandboxFlags> {
        if !on && allow_write.is_empty() && deny_read.is_empty() && allow_domain.is_empty() {
            return None;
        }
        let here = std::env::current_dir().unwrap_or_default();
        let absolute = |paths: Vec<String>| -> Vec<String> {
            (paths.into_iter())
                .map(|p| match p.starts_with('~') {
                    true => p,
                    false => here.join(p).display().to_string(),
                })
                .collect()
        };
        Some(SandboxFlags(serde_json::json!({
            "filesystem": {"allowWrite": absolute(allow_write), "denyRead": absolute(deny_read)},
            "network": {"allowedDomains": allow_domain},
        })))
    }
}

pub fn config(
    argv: Option<Vec<String>>,
    url: Option<String>,
    headers: Vec<(String, String)>,
    env: Vec<(String, String)>,
    tls: UrlTls,
    sandbox: Option<SandboxFlags>,
) -> Result<(String, ServerConfig), String> {
    match (argv, url) {
        (Some(_), Some(_)) => {
            Err("give a server as `-- COMMAND ARGS...` or --url, not both".into())
        }
        (Some(argv), None) => {
            let Some((program, rest)) = argv.split_first() else {
                return Err("`--` needs a COMMAND".into());
            };
            if !headers.is_empty() {
                return Err("--header goes with --url, not with a command".into());
            }
            if !tls.is_empty() {
                return Err(
                    "--ca-file, --client-cert and --client-key go with --url, not with a command"
                        .into(),
                );
            }
            let config = ServerConfig {
                command: Some(program.clone()),
                args: rest.to_vec(),
                env: env.into_iter().collect(),
                sandbox_enabled: sandbox.is_some().then_some(true),
                sandbox: sandbox.map(|s| s.0),
                ..ServerConfig::default()
            };
            Ok((name_of_command(program, rest), config))
        }
        (None, Some(url)) => {
            if !env.is_empty() {
                return Err("--env goes with a command, not with --url".into());
            }
            if sandbox.is_some() {
                return Err("--sandbox and its rules go with a command, not with --url: a remote server runs elsewhere".into());
            }
            let config = ServerConfig {
                url: Some(url.clone()),
                headers: headers.into_iter().collect(),
                ca_file: tls.ca_file,
                client_cert: tls.client_cert,
                client_key: tls.client_key,
                ..ServerConfig::default()
            };
            Ok((name_of_url(&url), config))
        }
        (None, None) => Err("no server given".into()),
    }
}

fn stem(path: &str) -> &str {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    file.split('.').next().unwrap_or(file)
}

/// `npx -y @scope/server-files@1.2` → `server-files`; `./target/debug/my-server` → `my-server`.
fn name_of_command(program: &str, rest: &[String]) -> String {
    let launcher = stem(program);
    let operand = LAUNCHERS
        .contains(&launcher)
        .then(|| rest.iter().find(|a| !a.starts_with('-')))
        .flatten();
    let name = match operand {
        Some(package) => {
            let package = package.trim_start_matches('@');
            let last = package.rsplit('/').next().unwrap_or(package);
            stem(last.split('@').next().unwrap_or(last)).to_owned()
        }
        None => stem(program).to_owned(),
    };
    sanitize(&name)
}

/// `https://mcp.example.com/mcp` → `mcp-example-com`.
fn name_of_url(url: &str) -> String {
    let host = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = host.split(':').next().unwrap_or(host);
    sanitize(&host.replace('.', "-"))
}

fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let clean = clean.trim_matches('-');
    if clean.is_empty() {
        "server".to_owned()
    } else {
        clean.to_ascii_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_come_from_what_the_server_is() {
        assert_eq!(
            name_of_command(
                "npx",
                &words(&[
                    "-y",
                    "@modelcontextprotocol/server-everything@2026.1.1",
                    "stdio"
                ])
            ),
            "server-everything"
        );
        assert_eq!(
            name_of_command("uvx", &words(&["mcp-server-time"])),
            "mcp-server-time"
        );
        assert_eq!(
            name_of_command("./target/debug/my-server", &words(&["--x"])),
            "my-server"
        );
        assert_eq!(
            name_of_url("https://user:pw@mcp.example.com:8443/mcp?k=v"),
            "mcp-example-com"
        );
        assert!(config(None, None, Vec::new(), Vec::new(), UrlTls::default(), None).is_err());
    }
}
