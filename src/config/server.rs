//! [`ServerConfig`]: one server as users write it (the `.mcp.json` shape).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::client::Endpoint;
use crate::error::Error;
use crate::transport::{HttpTarget, StdioCommand};

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransportType {
    /// A local process over stdin/stdout (the default).
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Legacy HTTP+SSE.
    Sse,
}

impl TransportType {
    /// The config spelling: `stdio`, `http` or `sse`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TransportType::Stdio => "stdio",
            TransportType::Http => "http",
            TransportType::Sse => "sse",
        }
    }
}

/// One server's config. Unknown fields are kept in `extra` (and written back unchanged). Its
/// `Debug` shows the names of `env` and `headers` entries, never their values.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "lenient::string_map"
    )]
    pub env: BTreeMap<String, String>,
    /// stdio: the working directory (default: the project directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// http/sse: the server's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// http/sse: headers sent with every request.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "lenient::string_map"
    )]
    pub headers: BTreeMap<String, String>,
    /// `false` skips the server before any connection (`"true"`, `"false"`, `1`, `0` are read
    /// as booleans too).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::bool"
    )]
    pub enabled: Option<bool>,
    /// `true` skips the server like `enabled: false` (the spelling of Windsurf, Cline, Roo Code,
    /// Amazon Q, and many `.mcp.json` files in the wild); read as leniently as `enabled`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::bool"
    )]
    pub disabled: Option<bool>,
    /// `timeout`: the connect (handshake) timeout in milliseconds (a numeric string is read
    /// too); see [`ServerConfig::timeout`] for the `Duration`.
    #[serde(
        rename = "timeout",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::millis"
    )]
    pub timeout_ms: Option<u64>,
    /// `toolTimeout`: the default bound on each tool call, in milliseconds; see
    /// [`ServerConfig::tool_timeout`].
    #[serde(
        rename = "toolTimeout",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::millis"
    )]
    pub tool_timeout_ms: Option<u64>,
    /// http/sse: the name of an environment variable whose value is sent as
    /// `Authorization: Bearer <value>`, read at connect time (Codex's `bearer_token_env_var`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Authentication settings, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Value>,
    /// http/sse: the OAuth client of this server (`clientId`, `clientSecret`,
    /// `clientMetadataUrl`, `scopes`, `callbackPort`, `grant`, `privateKeyFile`,
    /// `signingAlgorithm`, `enterprise`; see the `auth` module's docs); `{}` lets
    /// the library register itself where the server allows it. Secret values (`clientSecret`,
    /// the enterprise `idToken` and `idpClientSecret`) are resolved at connect time like header
    /// values (`!command`, an environment variable's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Value>,
    /// http/sse: this server's proxy, `http://[user:password@]host:port` (or `https://`), or
    /// `direct`; without it, the environment's (see
    /// [`HttpTarget::proxy`](crate::transport::HttpTarget::proxy)). `Debug` never shows its
    /// credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// http/sse: a PEM file of CAs this server's certificate (and its OAuth endpoints') may
    /// chain to, trusted beside the system's store; relative to the project, `~/` is home.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// http/sse: the client certificate (PEM: the certificate, then its chain) for servers
    /// that ask for one (mutual TLS), OAuth endpoints included; with `clientKey`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
    /// http/sse: the unencrypted PEM private key of `clientCert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// stdio: `true` runs the server in an operating-system sandbox (VS Code's
    /// `sandboxEnabled`; read as leniently as `enabled`). See [`ServerConfig::sandbox`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::bool"
    )]
    pub sandbox_enabled: Option<bool>,
    /// stdio: the sandbox's rules as written, VS Code's shape: `filesystem` (`allowWrite`,
    /// `denyRead`, `denyWrite`: paths, `~/`, `${userHome}` and `${workspaceFolder}` resolved,
    /// a relative path the project's) and `network` (`allowedDomains`, `deniedDomains`:
    /// names, `*.example.com` for the names under one). They apply when `sandboxEnabled` is
    /// `true`; see the transport module's page for what the sandbox allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
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

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
        f.debug_struct("ServerConfig")
            .field("type", &self.transport)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &names(&self.env))
            .field("cwd", &self.cwd)
            .field("url", &self.url.as_deref().map(crate::net::url::redact))
            .field("headers", &names(&self.headers))
            .field("enabled", &self.enabled)
            .field("disabled", &self.disabled)
            .field("timeout_ms", &self.timeout_ms)
            .field("tool_timeout_ms", &self.tool_timeout_ms)
            .field("oauth", &self.oauth.is_some())
            .field("proxy", &self.proxy.as_deref().map(crate::net::url::redact))
            .field("ca_file", &self.ca_file)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .field("sandbox_enabled", &self.sandbox_enabled)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

/// Checks a server config (the rules and messages hosts show users). Empty when valid.
pub fn validate_server_config(name: &str, config: &ServerConfig) -> Vec<String> {
    let mut errors = Vec::new();
    let has = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.trim().is_empty());
    if has(&config.command) && has(&config.url) {
        errors.push(format!(
            "Server \"{name}\": both \"command\" and \"url\" are set - server should be either stdio (command) OR http/sse (url), not both"
        ));
    }
    let kind =
        config
            .transport
            .as_deref()
            .unwrap_or(if has(&config.url) { "http" } else { "stdio" });
    match kind {
        "stdio" if !has(&config.command) => errors.push(format!(
            "Server \"{name}\": stdio server requires \"command\" field"
        )),
        "http" | "sse" | "streamable-http" | "streamableHttp" if !has(&config.url) => errors.push(
            format!("Server \"{name}\": {kind} server requires \"url\" field"),
        ),
        "stdio" | "http" | "sse" | "streamable-http" | "streamableHttp" => {}
        other => errors.push(format!(
            "Server \"{name}\": unknown server type \"{other}\""
        )),
    }
    for header in config.headers.keys() {
        if let Some(why) = owned_header(header) {
            errors.push(format!(
                "Server \"{name}\": header \"{header}\" cannot be configured: {why}"
            ));
        }
    }
    match (has(&config.client_cert), has(&config.client_key)) {
        (true, false) => errors.push(format!(
            "Server \"{name}\": \"clientCert\" needs \"clientKey\" (the certificate's private key)"
        )),
        (false, true) => errors.push(format!(
            "Server \"{name}\": \"clientKey\" needs \"clientCert\" (the certificate it is the key of)"
        )),
        _ => {}
    }
    errors.extend(super::sandbox::problems(name, config));
    errors
}

/// Why a header may not come from a config: the framing and connection headers (a second
/// `Content-Length` or `Transfer-Encoding` beside ours is a request-smuggling shape toward any
/// proxy in front of the server), and those the transport keeps for the session. `None` for a
/// header a config may set.
fn owned_header(name: &str) -> Option<&'static str> {
    let name = name.trim().to_ascii_lowercase();
    match name.as_str() {
        "content-length" | "transfer-encoding" | "te" | "trailer" => {
            Some("it frames the request, which the transport does")
        }
        "connection" | "upgrade" | "keep-alive" => Some("the transport manages the connection"),
        "mcp-session-id" | "mcp-protocol-version" | "last-event-id" => {
            Some("the transport sets it for the session")
        }
        _ if name.starts_with("proxy-") => {
            Some("it is for a proxy; give the proxy's credentials in its URL")
        }
        _ => None,
    }
}

/// Checks a server name we write to a config file: 1 to 100 of `[A-Za-z0-9_.-]`.
pub fn validate_server_name(name: &str) -> Result<(), Error> {
    let ok = (1..=100).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Config {
            message: format!(
                "invalid server name {name:?}: use 1 to 100 letters, digits, '_', '.' or '-'"
            ),
        })
    }
}

impl ServerConfig {
    /// The URL as it may be shown (listings, errors): userinfo and fragment dropped, each
    /// query value replaced by `REDACTED`.
    pub fn url_for_display(&self) -> Option<String> {
        self.url.as_deref().map(crate::net::url::redact)
    }

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

    /// The transport, spelled `stdio`, `http` or `sse`: the explicit `type` (with its other
    /// spellings, `streamable-http` and `streamableHttp`), else `http` when there is a `url`,
    /// else `stdio`. An unknown `type` is an error that names it.
    pub fn transport_type(&self) -> Result<&'static str, Error> {
        self.transport_kind().map(TransportType::as_str)
    }

    /// [`ServerConfig::transport_type`] as a value.
    pub(crate) fn transport_kind(&self) -> Result<TransportType, Error> {
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

    /// Whether the server is enabled (the default): neither `enabled: false` nor
    /// `disabled: true`.
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true) && !self.disabled.unwrap_or(false)
    }

    /// The configured handshake timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    }

    /// How this server is connected: `base` with the server's `timeout`, which bounds its
    /// connect and every request (its `toolTimeout`, if any, bounds its tool calls instead).
    /// The one place a server's `timeout` reaches the connection.
    pub fn connect_options(
        &self,
        base: &crate::client::ConnectOptions,
    ) -> crate::client::ConnectOptions {
        let mut options = base.clone();
        if let Some(t) = self.timeout() {
            options.timeout = t;
            options.request_timeout = t;
        }
        options
    }

    /// How long a connect of this server may take: its `timeout`, else `default`.
    pub fn connect_bound(&self, default: Duration) -> Duration {
        self.timeout().unwrap_or(default)
    }

    /// The configured default bound on tool calls.
    pub fn tool_timeout(&self) -> Option<Duration> {
        self.tool_timeout_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
    }

    /// Whether a tool passes the `enabledTools` / `disabledTools` filters.
    pub fn tool_allowed(&self, tool: &str) -> bool {
        let listed =
            |list: &Option<Vec<String>>| list.as_ref().map(|l| l.iter().any(|t| t == tool));
        listed(&self.enabled_tools).unwrap_or(true)
            && !listed(&self.disabled_tools).unwrap_or(false)
    }

    /// A file setting as a path: `~/` stays for the TLS layer to expand, a relative path is
    /// the project's, an empty one is none.
    pub(crate) fn file(
        &self,
        value: &Option<String>,
        project_dir: &Path,
    ) -> Option<std::path::PathBuf> {
        let value = value.as_deref().map(str::trim).filter(|v| !v.is_empty())?;
        Some(if value.starts_with("~/") {
            value.into()
        } else {
            project_dir.join(value)
        })
    }

    /// Where to connect. A relative `cwd`, `caFile`, `clientCert` or `clientKey` is resolved
    /// against `project_dir`, which is also the default working directory.
    pub fn endpoint(&self, project_dir: &Path) -> Result<Endpoint, Error> {
        match self.transport_kind()? {
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
                    sandbox: super::sandbox::rules(self, project_dir)?,
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
                    proxy: self.proxy.clone(),
                    ca_file: self.file(&self.ca_file, project_dir),
                    client_cert: self.file(&self.client_cert, project_dir),
                    client_key: self.file(&self.client_key, project_dir),
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

/// Lenient readers for the fields users get subtly wrong.
mod lenient {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// A map of strings; numbers and booleans become their text, nulls are dropped.
    pub(super) fn string_map<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        let raw = Option::<BTreeMap<String, Value>>::deserialize(d)?.unwrap_or_default();
        Ok(raw
            .into_iter()
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k, s)),
                Value::Number(n) => Some((k, n.to_string())),
                Value::Bool(b) => Some((k, b.to_string())),
                _ => None,
            })
            .collect())
    }

    /// A boolean, or `"true"`/`"false"`/`"1"`/`"0"`/`1`/`0`; anything else is absent.
    pub(super) fn bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            Some(Value::Bool(b)) => Some(b),
            Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" => Some(true),
                "false" | "0" => Some(false),
                _ => None,
            },
            Some(Value::Number(n)) => n.as_u64().filter(|v| *v <= 1).map(|v| v == 1),
            _ => None,
        })
    }

    /// A non-negative whole number of milliseconds, or a string of one.
    pub(super) fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        })
    }
}

/// The hex SHA-256 of the canonical JSON of the unresolved config.
pub fn config_hash(config: &ServerConfig) -> String {
    // serde_json's maps are sorted by key, so the text is canonical.
    let canonical = serde_json::to_string(config).unwrap_or_default();
    let digest = Sha256::digest(canonical.as_bytes());
    crate::hex::hex(&digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_servers_timeout_bounds_its_connect_and_every_request_in_one_place() {
        let base = crate::client::ConnectOptions::default();
        let plain = ServerConfig::stdio("x", ["y"]);
        let o = plain.connect_options(&base);
        assert_eq!(
            (o.timeout, o.request_timeout),
            (base.timeout, base.request_timeout)
        );
        assert_eq!(
            plain.connect_bound(Duration::from_secs(7)),
            Duration::from_secs(7)
        );
        let timed = ServerConfig {
            timeout_ms: Some(1500),
            ..plain
        };
        let o = timed.connect_options(&base);
        let t = Duration::from_millis(1500);
        assert_eq!((o.timeout, o.request_timeout), (t, t));
        assert_eq!(timed.connect_bound(Duration::from_secs(7)), t);
    }

    #[test]
    fn reads_the_mcp_json_server_shape_and_keeps_unknown_fields() {
        let raw = json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "timeout": 5000,
                         "enabledTools": ["a"], "alwaysAllow": ["x"]});
        let c: ServerConfig = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(c.transport_kind().unwrap(), TransportType::Stdio);
        assert_eq!(c.transport_type().unwrap(), "stdio");
        assert_eq!(c.timeout(), Some(Duration::from_secs(5)));
        assert!(c.tool_allowed("a") && !c.tool_allowed("b"));
        assert_eq!(serde_json::to_value(&c).unwrap(), raw);
    }

    #[test]
    fn validation_messages() {
        let v =
            |c: serde_json::Value| validate_server_config("s", &serde_json::from_value(c).unwrap());
        assert!(v(json!({"command": "x"})).is_empty());
        assert!(v(json!({"url": "http://127.0.0.1/"})).is_empty());
        assert_eq!(
            v(json!({"command": "x", "url": "http://127.0.0.1/"})),
            ["Server \"s\": both \"command\" and \"url\" are set - server should be either stdio (command) OR http/sse (url), not both"]
        );
        assert_eq!(
            v(json!({})),
            ["Server \"s\": stdio server requires \"command\" field"]
        );
        assert_eq!(
            v(json!({"type": "sse"})),
            ["Server \"s\": sse server requires \"url\" field"]
        );
        assert_eq!(
            v(json!({"type": "ws", "url": "x"})),
            ["Server \"s\": unknown server type \"ws\""]
        );
        // Headers the transport owns: named, each, whatever their case.
        assert_eq!(
            v(json!({"url": "http://127.0.0.1/", "headers": {
                "Transfer-Encoding": "chunked", "content-length": "0", "MCP-Session-Id": "x",
                "Proxy-Authorization": "Basic x", "Authorization": "Bearer t", "Host": "h"}})),
            [
                "Server \"s\": header \"MCP-Session-Id\" cannot be configured: the transport sets it for the session",
                "Server \"s\": header \"Proxy-Authorization\" cannot be configured: it is for a proxy; give the proxy's credentials in its URL",
                "Server \"s\": header \"Transfer-Encoding\" cannot be configured: it frames the request, which the transport does",
                "Server \"s\": header \"content-length\" cannot be configured: it frames the request, which the transport does",
            ]
        );
        assert!(validate_server_name("my.server-1_a").is_ok());
        assert!(validate_server_name("").is_err());
        assert!(validate_server_name("a b").is_err());
        assert!(validate_server_name(&"a".repeat(101)).is_err());
    }

    #[test]
    fn lenient_fields() {
        let c: ServerConfig = serde_json::from_value(
            json!({"command": "x", "enabled": "false", "timeout": "1500", "env": {"PORT": 3000, "DEBUG": true, "N": null}}),
        )
        .unwrap();
        assert_eq!(c.enabled, Some(false));
        assert_eq!(c.timeout_ms, Some(1500));
        assert_eq!(c.env.get("PORT").map(String::as_str), Some("3000"));
        assert_eq!(c.env.get("DEBUG").map(String::as_str), Some("true"));
        assert!(!c.env.contains_key("N"));
        let c: ServerConfig =
            serde_json::from_value(json!({"enabled": "maybe", "timeout": -1})).unwrap();
        assert_eq!((c.enabled, c.timeout_ms), (None, None));
    }

    #[test]
    fn infers_the_transport() {
        let c: ServerConfig =
            serde_json::from_value(json!({"url": "http://127.0.0.1:1/mcp"})).unwrap();
        assert_eq!(c.transport_kind().unwrap(), TransportType::Http);
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
        // A server's own proxy goes with it, and `Debug` hides its credentials.
        let proxy = "http://me:pr0xy-pw@proxy.corp:3128";
        let proxied: ServerConfig =
            serde_json::from_value(json!({"url": url, "proxy": proxy})).unwrap();
        assert!(!format!("{proxied:?}").contains("pr0xy-pw"), "{proxied:?}");
        assert!(matches!(
            proxied.endpoint(Path::new("/")).unwrap(),
            Endpoint::Url(t) if t.proxy.as_deref() == Some(proxy)
        ));
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
