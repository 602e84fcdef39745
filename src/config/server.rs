//! [`ServerConfig`]: one server as users write it (the `.mcp.json` shape).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::client::Endpoint;
use crate::transport::{HttpTarget, StdioCommand};
use crate::Error;

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportType {
    /// A local process over stdin/stdout (the default).
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Legacy HTTP+SSE.
    Sse,
}

impl TransportType {
    /// The config spelling: `stdio`, `http` or `sse`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportType::Stdio => "stdio",
            TransportType::Http => "http",
            TransportType::Sse => "sse",
        }
    }
}

/// One server's config. Unknown fields are kept in `extra` (and written back unchanged).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfig {
    /// `stdio` (default), `http` or `sse`, as written.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// stdio: the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: environment variables set on top of ours.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// stdio: the working directory (default: the project directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// http/sse: the server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// http/sse: headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// `false` skips the server before any connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Connect (handshake) timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Authentication settings, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Value>,
    /// Only these tools are exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_tools: Option<Vec<String>>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ServerConfig {
    /// A stdio server config.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> ServerConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ServerConfig {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..ServerConfig::default()
        }
    }

    /// The transport: the explicit `type`, else `http` when there is a `url`, else `stdio`.
    pub fn transport_type(&self) -> Result<TransportType, Error> {
        match self.transport.as_deref() {
            None if self.url.is_some() => Ok(TransportType::Http),
            None | Some("stdio") => Ok(TransportType::Stdio),
            Some("http") | Some("streamable-http") | Some("streamableHttp") => {
                Ok(TransportType::Http)
            }
            Some("sse") => Ok(TransportType::Sse),
            Some(other) => Err(Error::Config {
                message: format!("unknown transport type \"{other}\""),
            }),
        }
    }

    /// Whether the server is enabled (the default).
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The configured handshake timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout.filter(|ms| *ms > 0).map(Duration::from_millis)
    }

    /// Whether a tool passes the `enabledTools` / `disabledTools` filters.
    pub fn tool_allowed(&self, tool: &str) -> bool {
        let listed =
            |list: &Option<Vec<String>>| list.as_ref().map(|l| l.iter().any(|t| t == tool));
        listed(&self.enabled_tools).unwrap_or(true)
            && !listed(&self.disabled_tools).unwrap_or(false)
    }

    /// Where to connect. A relative `cwd` is resolved against `project_dir`, which is also the
    /// default working directory.
    pub fn endpoint(&self, project_dir: &Path) -> Result<Endpoint, Error> {
        match self.transport_type()? {
            TransportType::Stdio => {
                let command = self
                    .command
                    .clone()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| Error::Config {
                        message: "stdio server requires \"command\" field".into(),
                    })?;
                let cwd = match &self.cwd {
                    Some(c) => project_dir.join(c),
                    None => project_dir.to_path_buf(),
                };
                Ok(Endpoint::Stdio(StdioCommand {
                    program: command,
                    args: self.args.clone(),
                    env: self
                        .env
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    cwd: Some(cwd),
                }))
            }
            kind => {
                let url = self
                    .url
                    .clone()
                    .filter(|u| !u.trim().is_empty())
                    .ok_or_else(|| Error::Config {
                        message: format!("{} server requires \"url\" field", kind.as_str()),
                    })?;
                let target = HttpTarget {
                    url,
                    headers: self
                        .headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    auth: None,
                };
                Ok(match (kind, self.transport.is_some()) {
                    (TransportType::Sse, _) => Endpoint::Sse(target),
                    (_, true) => Endpoint::Http(target),
                    (_, false) => Endpoint::Url(target),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_mcp_json_server_shape_and_keeps_unknown_fields() {
        let raw = json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "timeout": 5000,
                         "enabledTools": ["a"], "alwaysAllow": ["x"]});
        let c: ServerConfig = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(c.transport_type().unwrap(), TransportType::Stdio);
        assert_eq!(c.timeout(), Some(Duration::from_secs(5)));
        assert!(c.tool_allowed("a") && !c.tool_allowed("b"));
        assert_eq!(serde_json::to_value(&c).unwrap(), raw);
    }

    #[test]
    fn infers_the_transport() {
        let c: ServerConfig =
            serde_json::from_value(json!({"url": "http://127.0.0.1:1/mcp"})).unwrap();
        assert_eq!(c.transport_type().unwrap(), TransportType::Http);
        let c: ServerConfig = serde_json::from_value(json!({"type": "carrier-pigeon"})).unwrap();
        assert!(c.transport_type().is_err());
    }

    #[test]
    fn url_endpoints_name_their_transport_or_detect_it() {
        let parse = |v: serde_json::Value| {
            serde_json::from_value::<ServerConfig>(v)
                .unwrap()
                .endpoint(Path::new("/"))
        };
        let url = "http://127.0.0.1:9/mcp";
        assert!(matches!(parse(json!({"url": url})).unwrap(), Endpoint::Url(t) if t.url == url));
        assert!(matches!(
            parse(json!({"type": "http", "url": url})).unwrap(),
            Endpoint::Http(_)
        ));
        let sse = parse(json!({"type": "sse", "url": url, "headers": {"X-Key": "k"}})).unwrap();
        assert!(
            matches!(&sse, Endpoint::Sse(t) if t.headers == [("X-Key".to_owned(), "k".to_owned())])
        );
        let missing = parse(json!({"type": "http"})).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "Invalid config: http server requires \"url\" field"
        );
    }

    #[test]
    fn stdio_endpoint_defaults_cwd_to_the_project() {
        let c = ServerConfig::stdio("srv", ["--x"]);
        let Endpoint::Stdio(cmd) = c.endpoint(Path::new("/p")).unwrap() else {
            panic!("not stdio")
        };
        assert_eq!(cmd.cwd.as_deref(), Some(Path::new("/p")));
        assert_eq!(cmd.args, ["--x"]);
        let missing = ServerConfig::default()
            .endpoint(Path::new("/p"))
            .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "Invalid config: stdio server requires \"command\" field"
        );
    }
}
