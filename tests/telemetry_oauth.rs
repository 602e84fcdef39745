//! OpenTelemetry (the `otel` feature) and OAuth: a token refresh the server's 401 causes is an
//! HTTP CLIENT span under the call that needed it, with the authorization server's address and
//! status, and nothing of the token or the URL's path and query.
#![cfg(feature = "oauth")]

mod common;
#[path = "common/oauth_server.rs"]
mod oauth_server;
mod otel_support;

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_runtime::auth::headless;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use oauth_server::*;
use opentelemetry::trace::SpanKind;
use otel_support::{attr, Root};
use serde_json::json;

#[test]
fn a_refresh_is_a_span_under_the_call_that_needed_it() {
    // The providers come first: a connection takes them when it connects.
    otel_support::sdk();
    let server = OAuthServer::start(Script::default());
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        auth: Some(storage("otel-refresh")),
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    options.connect.request_timeout = Duration::from_secs(20);
    let manager = McpManager::new(options);
    let config = ServerConfig {
        transport: Some("http".into()),
        url: Some(server.url()),
        oauth: Some(json!({"clientId": "pre-registered"})),
        ..ServerConfig::default()
    };
    manager.connect_servers(&BTreeMap::from([("protected".to_owned(), config)]));
    manager
        .login("protected", headless(oauth_server::options()))
        .unwrap();
    common::call_tool(&manager, "protected", "whoami", json!({})).unwrap();

    let root = Root::start("refresh");
    server.expire_access_tokens();
    common::call_tool(&manager, "protected", "whoami", json!({})).unwrap();
    let call = root.span("tools/call whoami");
    assert_eq!(call.parent_span_id, root.span_id());
    let token = root
        .spans()
        .into_iter()
        .find(|s| s.name == "POST" && attr(s, "mcp.client.operation").as_deref() == Some("oauth"))
        .expect("the refresh's span");
    assert_eq!(token.span_kind, SpanKind::Client);
    assert_eq!(token.parent_span_id, call.span_context.span_id());
    assert_eq!(
        attr(&token, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attr(&token, "server.address").as_deref(), Some("127.0.0.1"));
    let everything = format!("{:?}", root.spans());
    for secret in server.refresh_tokens() {
        assert!(!everything.contains(&secret), "a refresh token in a span");
    }
    assert!(!everything.contains("/token"), "no URL path in a span");
    manager.close();
}
