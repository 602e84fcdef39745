//! The client side of the OAuth tests: what phase 2's transport will do, played by the tests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::OAuthServer;

use mcp_runtime::auth::{Authorizer, HeadlessAuthorizer, OAuthConfig, OAuthOptions, OAuthProvider};
use mcp_runtime::config::FileAuthStorage;
use mcp_runtime::transport::AuthProvider as _;

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
    provider_with(
        server,
        config,
        storage(name),
        Arc::new(HeadlessAuthorizer::new(options())),
    )
}

pub fn provider_with(
    server: &OAuthServer,
    config: Value,
    storage: Arc<FileAuthStorage>,
    authorizer: Arc<dyn Authorizer>,
) -> OAuthProvider {
    OAuthProvider::new(
        &server.url(),
        OAuthConfig::from_value(&config).unwrap(),
        storage,
        authorizer,
        options(),
    )
    .unwrap()
}

/// One MCP request, as the transport will send it: `Authorization` from the provider, a
/// `401` or `403` handed to it, the request re-sent while it says so.
pub fn call(provider: &OAuthProvider, url: &str) -> Result<(), mcp_runtime::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut op = provider.operation();
    for _ in 0..10 {
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
        match response.status().as_u16() {
            200 => return Ok(()),
            401 => provider.on_unauthorized(&mut op, challenge.as_deref())?,
            403 => provider.on_insufficient_scope(&mut op, challenge.as_deref().unwrap_or(""))?,
            s => panic!("unexpected status {s}"),
        }
    }
    panic!("the provider asked for more than 10 re-sends");
}
