//! The client side of the OAuth tests: what phase 2's transport will do, played by the tests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::OAuthServer;

use mcp_runtime::auth::{headless, Authorizer, OAuthOptions, OAuthProvider};
use mcp_runtime::config::FileAuthStorage;
use mcp_runtime::transport::{AuthProvider as _, MAX_AUTH_RETRIES};

/// Options with short bounds.
pub fn options() -> OAuthOptions {
    OAuthOptions {
        request_timeout: Duration::from_secs(5),
        login_timeout: Duration::from_secs(20),
        ..OAuthOptions::default()
    }
}

/// A fresh auth file.
pub fn storage(name: &str) -> Arc<FileAuthStorage> {
    let dir = std::env::temp_dir().join(format!("mcp-oauth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Arc::new(FileAuthStorage::new(dir.join("auth.json")))
}

/// A provider for the server, headless.
pub fn provider(server: &OAuthServer, config: Value, name: &str) -> OAuthProvider {
    provider_with(server, config, storage(name), headless(options()))
}

pub fn provider_with(
    server: &OAuthServer,
    config: Value,
    storage: Arc<FileAuthStorage>,
    authorizer: Arc<dyn Authorizer>,
) -> OAuthProvider {
    OAuthProvider::new(&server.url(), &config, storage, authorizer, options()).unwrap()
}

/// One MCP request, as the HTTP transport sends it: `Authorization` from the provider, a `401`
/// or `403` handed to it, the request re-sent while it says so (at most
/// `MAX_AUTH_RETRIES` times per status), and the provider's refusal as the error when it declines.
pub fn call(provider: &OAuthProvider, url: &str) -> Result<(), mcp_runtime::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let (mut unauthorized, mut forbidden) = (0, 0);
    loop {
        let mut req = agent.post(url).header("Content-Type", "application/json");
        if let Some(auth) = provider.authorization() {
            req = req.header("Authorization", auth);
        }
        let response = req
            .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
            .expect("the resource answers");
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = response.status().as_u16();
        let again = match status {
            200 => return Ok(()),
            401 if unauthorized < MAX_AUTH_RETRIES => {
                unauthorized += 1;
                provider.on_unauthorized(challenge.as_deref(), unauthorized - 1)
            }
            403 if forbidden < MAX_AUTH_RETRIES => {
                forbidden += 1;
                provider.on_forbidden(challenge.as_deref().unwrap_or(""), forbidden - 1)
            }
            401 | 403 => false,
            s => panic!("unexpected status {s}"),
        };
        if !again {
            return Err(provider.refusal().unwrap_or(mcp_runtime::Error::Http {
                status,
                body: String::new(),
                www_authenticate: challenge,
            }));
        }
    }
}
