//! OAuth through the whole stack: a manager connecting to a protected MCP server of our own
//! (loopback AS and resource), `needs login` without a login, `McpManager::login` with a
//! headless authorizer, tokens used on every request, a 401 answered by a refresh and the call
//! re-sent, and logout.
#![cfg(feature = "oauth")]

mod common;
#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::auth::headless;
use mcp_runtime::auth::AuthStorage;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::Error;
use oauth_server::*;
use serde_json::json;

fn manager(storage: Arc<dyn AuthStorage>) -> McpManager {
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        auth: Some(storage),
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    options.connect.request_timeout = Duration::from_secs(20);
    McpManager::new(options)
}

fn protected(server: &OAuthServer, oauth: serde_json::Value) -> BTreeMap<String, ServerConfig> {
    let config = ServerConfig {
        transport: Some("http".into()),
        url: Some(server.url()),
        oauth: Some(oauth),
        ..ServerConfig::default()
    };
    BTreeMap::from([("protected".to_owned(), config)])
}

#[test]
fn a_protected_server_needs_a_login_then_works_and_refreshes_on_401() {
    let server = OAuthServer::start(Script::default());
    let storage = storage("mcp-e2e");
    let manager = manager(storage.clone());
    let configs = protected(&server, json!({"clientId": "pre-registered"}));
    let report = manager.connect_servers(&configs);
    // Without a login the background connect neither blocks nor asks anybody.
    assert!(report.errors.contains_key("protected"), "{report:?}");
    let status = manager.connection_status("protected");
    assert_eq!(status.as_str(), "disconnected");
    assert!(status.needs_login(), "{:?}", status.error());
    assert!(
        server.seen_at("/authorize").is_empty(),
        "no login was attempted"
    );

    manager.login("protected", headless(options())).unwrap();
    assert_eq!(manager.connection_status("protected").as_str(), "connected");
    assert!(manager.auth_status("protected").unwrap().logged_in);
    let out = common::call_tool(&manager, "protected", "whoami", json!({})).unwrap();
    assert!(out.text().starts_with("scope"), "{}", out.text());

    // The access token is revoked server-side: the next call gets a 401, refreshes, re-sends.
    let refreshes = |s: &OAuthServer| {
        s.seen_at("/token")
            .iter()
            .filter(|t| t.form.get("grant_type").map(String::as_str) == Some("refresh_token"))
            .count()
    };
    let before = refreshes(&server);
    server.expire_access_tokens();
    let out = common::call_tool(&manager, "protected", "whoami", json!({})).unwrap();
    assert!(out.text().starts_with("scope"));
    assert_eq!(refreshes(&server), before + 1);

    // Tokens only ever went to the server they belong to, never in a URL.
    for seen in server.seen() {
        for secret in server.secrets() {
            assert!(
                !seen.path.contains(&secret),
                "a token in a URL: {}",
                seen.path
            );
        }
    }

    manager.logout("protected").unwrap();
    assert!(!manager.auth_status("protected").unwrap().logged_in);
    manager.disconnect_all();
}

#[test]
fn a_server_with_its_own_authorization_header_gets_no_oauth() {
    let server = OAuthServer::start(Script::default());
    let manager = manager(storage("mcp-own-header"));
    let mut configs = protected(&server, json!({}));
    let config = configs.get_mut("protected").unwrap();
    config.oauth = None;
    config
        .headers
        .insert("Authorization".into(), "Bearer static-and-wrong".into());
    let report = manager.connect_servers(&configs);
    assert!(matches!(
        report.errors.get("protected"),
        Some(Error::Http { status: 401, .. })
    ));
    assert!(manager.auth_status("protected").is_none());
    // No discovery, no registration, no token request: the header is the user's choice.
    assert!(server.seen_at("/token").is_empty());
    assert!(server.seen_at("/register").is_empty());
    manager.disconnect_all();
}
