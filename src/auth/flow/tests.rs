//! The flow, transition by transition (no I/O: each test plays the network).

use serde_json::json;

use super::*;
use crate::auth::challenge::Challenge;

pub(super) const SERVER: &str = "https://mcp.test/mcp";
pub(super) const AS: &str = "https://as.test";

pub(super) fn inputs(config: OAuthConfig) -> FlowInputs {
    FlowInputs {
        server_url: SERVER.into(),
        challenge: None,
        config,
        key: None,
        redirect_uri: Some("http://127.0.0.1:5000/callback".into()),
        granted_scopes: Vec::new(),
        previous_issuer: None,
        client_name: "test".into(),
        workload_token: None,
    }
}

fn pre_registered() -> OAuthConfig {
    OAuthConfig {
        client_id: Some("cid".into()),
        ..OAuthConfig::default()
    }
}

pub(super) fn ok(body: serde_json::Value) -> Reply {
    Reply {
        status: 200,
        content_type: Some("application/json".into()),
        body: body.to_string().into_bytes(),
    }
}

fn status(code: u16) -> Reply {
    Reply {
        status: code,
        content_type: None,
        body: Vec::new(),
    }
}

pub(super) fn as_metadata(extra: serde_json::Value) -> serde_json::Value {
    let mut m = json!({
        "issuer": AS,
        "authorization_endpoint": format!("{AS}/authorize"),
        "token_endpoint": format!("{AS}/token"),
        "code_challenge_methods_supported": ["S256"],
    });
    for (k, v) in extra.as_object().unwrap() {
        m[k] = v.clone();
    }
    m
}

pub(super) fn prm() -> serde_json::Value {
    json!({"resource": SERVER, "authorization_servers": [AS], "scopes_supported": ["read", "write"]})
}

/// A flow brought to its authorization step.
pub(super) fn to_authorize(mut input: FlowInputs, metadata: serde_json::Value) -> Flow {
    input.challenge.get_or_insert_with(|| Challenge {
        resource_metadata: Some("https://mcp.test/prm".into()),
        ..Challenge::default()
    });
    let mut flow = Flow::new(input).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    flow.on_authorization_server_metadata(ok(metadata)).unwrap();
    flow
}

fn authorize_url(flow: &Flow) -> String {
    match flow.next_action() {
        Action::Authorize(url) => url,
        other => panic!("expected Authorize, got {other:?}"),
    }
}

fn param(url: &str, name: &str) -> Option<String> {
    super::super::endpoints::parse_form(url.split_once('?').unwrap().1)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

#[test]
fn the_challenge_url_is_the_only_prm_candidate() {
    let mut i = inputs(pre_registered());
    i.challenge = Challenge::parse(r#"Bearer resource_metadata="https://mcp.test/x""#);
    let mut flow = Flow::new(i).unwrap();
    assert!(
        matches!(flow.next_action(), Action::FetchResourceMetadata(u) if u == "https://mcp.test/x")
    );
    let e = flow.on_resource_metadata(status(404)).unwrap_err();
    assert!(e.to_string().contains("HTTP 404"), "{e}");
}

#[test]
fn well_known_prm_then_path_aware_as_metadata_order() {
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    assert!(matches!(flow.next_action(),
        Action::FetchResourceMetadata(u) if u == "https://mcp.test/.well-known/oauth-protected-resource/mcp"));
    flow.on_resource_metadata(status(404)).unwrap();
    assert!(matches!(flow.next_action(),
        Action::FetchResourceMetadata(u) if u == "https://mcp.test/.well-known/oauth-protected-resource"));
    flow.on_resource_metadata(ok(
        json!({"resource": SERVER, "authorization_servers": ["https://as.test/t1"]}),
    ))
    .unwrap();
    let mut seen = Vec::new();
    while let Action::FetchAuthorizationServerMetadata(u) = flow.next_action() {
        seen.push(u);
        if seen.len() == 3 {
            break;
        }
        flow.on_authorization_server_metadata(status(404)).unwrap();
    }
    assert_eq!(
        seen,
        vec![
            "https://as.test/.well-known/oauth-authorization-server/t1",
            "https://as.test/.well-known/openid-configuration/t1",
            "https://as.test/t1/.well-known/openid-configuration",
        ]
    );
    let mut m = as_metadata(json!({}));
    m["issuer"] = json!("https://as.test/t1");
    flow.on_authorization_server_metadata(ok(m)).unwrap();
    assert!(matches!(flow.next_action(), Action::Authorize(_)));
}

#[test]
fn a_mismatched_issuer_is_discarded_and_the_next_candidate_tried() {
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    let mut evil = as_metadata(json!({}));
    evil["issuer"] = json!("https://evil.test");
    flow.on_authorization_server_metadata(ok(evil.clone()))
        .unwrap();
    assert!(matches!(flow.next_action(),
        Action::FetchAuthorizationServerMetadata(u) if u.ends_with("openid-configuration")));
    let e = flow.on_authorization_server_metadata(ok(evil)).unwrap_err();
    assert!(e.to_string().contains("another issuer"), "{e}");
}

#[test]
fn the_code_flow_sends_pkce_state_and_resource() {
    let mut flow = to_authorize(inputs(pre_registered()), as_metadata(json!({})));
    let url = authorize_url(&flow);
    assert!(url.starts_with("https://as.test/authorize?"));
    assert_eq!(param(&url, "response_type").as_deref(), Some("code"));
    assert_eq!(
        param(&url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(param(&url, "resource").as_deref(), Some(SERVER));
    assert_eq!(param(&url, "scope").as_deref(), Some("read write"));
    let state = param(&url, "state").unwrap();
    let challenge = param(&url, "code_challenge").unwrap();
    flow.on_redirect(&format!(
        "http://127.0.0.1:5000/callback?code=c0de&state={state}"
    ))
    .unwrap();
    let Action::RequestToken(req) = flow.next_action() else {
        panic!()
    };
    assert_eq!(req.url, "https://as.test/token");
    assert_eq!(req.param("code"), Some("c0de"));
    assert_eq!(req.param("resource"), Some(SERVER));
    assert_eq!(req.param("client_id"), Some("cid"));
    assert_eq!(
        crate::auth::pkce::s256(req.param("code_verifier").unwrap()),
        challenge
    );
    flow.on_token(ok(
        json!({"access_token": "at", "token_type": "Bearer", "expires_in": 60}),
    ))
    .unwrap();
    assert!(matches!(flow.next_action(), Action::Done));
    let login = flow.into_login().unwrap();
    assert_eq!(login.issuer, AS);
    assert_eq!(login.scopes, vec!["read", "write"]);
}

#[test]
fn pkce_is_required() {
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    let mut m = as_metadata(json!({}));
    m.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    let e = flow.on_authorization_server_metadata(ok(m)).unwrap_err();
    assert!(e.to_string().contains("S256"), "{e}");
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    let m = as_metadata(json!({"code_challenge_methods_supported": ["plain"]}));
    assert!(flow.on_authorization_server_metadata(ok(m)).is_err());
}

#[test]
fn iss_by_the_table() {
    let cases = [
        (true, Some(AS), true),
        (true, None, false),
        (true, Some("https://evil.test"), false),
        (false, Some(AS), true),
        (false, Some("https://evil.test"), false),
        (false, None, true),
    ];
    for (supported, iss, accepted) in cases {
        let m = as_metadata(json!({"authorization_response_iss_parameter_supported": supported}));
        let mut flow = to_authorize(inputs(pre_registered()), m);
        let state = param(&authorize_url(&flow), "state").unwrap();
        let mut redirect = format!("http://127.0.0.1:5000/callback?code=c&state={state}");
        if let Some(iss) = iss {
            redirect.push_str(&format!("&iss={}", super::super::endpoints::encode(iss)));
        }
        assert_eq!(
            flow.on_redirect(&redirect).is_ok(),
            accepted,
            "{supported} {iss:?}"
        );
    }
}

#[test]
fn a_wrong_state_or_a_denial_ends_the_login() {
    let mut flow = to_authorize(inputs(pre_registered()), as_metadata(json!({})));
    let e = flow
        .on_redirect("http://127.0.0.1:5000/callback?code=c&state=forged")
        .unwrap_err();
    assert!(e.to_string().contains("state"), "{e}");
    let mut flow = to_authorize(inputs(pre_registered()), as_metadata(json!({})));
    let state = param(&authorize_url(&flow), "state").unwrap();
    let e = flow
        .on_redirect(&format!(
            "http://127.0.0.1:5000/callback?error=access_denied&error_description=no+way&state={state}"
        ))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::OAuth {
                kind: OAuthErrorKind::Denied,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("access_denied (no way)"), "{e}");
}

#[test]
fn scopes_challenge_then_config_then_prm_and_offline_access_only_when_listed() {
    let mut i = inputs(pre_registered());
    i.challenge = Some(Challenge {
        resource_metadata: Some("https://mcp.test/prm".into()),
        scope: Some(vec!["files:read".into()]),
        ..Challenge::default()
    });
    let flow = to_authorize(
        i,
        as_metadata(json!({"scopes_supported": ["files:read", "offline_access"]})),
    );
    assert_eq!(
        param(&authorize_url(&flow), "scope").as_deref(),
        Some("files:read offline_access")
    );
    let flow = to_authorize(
        inputs(pre_registered()),
        as_metadata(json!({"scopes_supported": ["read"]})),
    );
    assert_eq!(
        param(&authorize_url(&flow), "scope").as_deref(),
        Some("read write")
    );
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    flow.on_resource_metadata(ok(
        json!({"resource": SERVER, "authorization_servers": [AS]}),
    ))
    .unwrap();
    flow.on_authorization_server_metadata(ok(as_metadata(json!({}))))
        .unwrap();
    assert_eq!(param(&authorize_url(&flow), "scope"), None);
}

#[test]
fn step_up_asks_for_the_union() {
    let mut i = inputs(pre_registered());
    i.granted_scopes = vec!["read".into()];
    i.challenge = Some(Challenge {
        resource_metadata: Some("https://mcp.test/prm".into()),
        scope: Some(vec!["admin".into(), "read".into()]),
        error: Some("insufficient_scope".into()),
        ..Challenge::default()
    });
    let flow = to_authorize(i, as_metadata(json!({})));
    assert_eq!(
        param(&authorize_url(&flow), "scope").as_deref(),
        Some("read admin")
    );
}

#[test]
fn a_prm_for_another_resource_is_refused() {
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    let e = flow
        .on_resource_metadata(ok(
            json!({"resource": "https://other.test/mcp", "authorization_servers": [AS]}),
        ))
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::OAuth {
                kind: OAuthErrorKind::Refused,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_2025_03_26_server_gets_the_default_endpoints() {
    let mut flow = Flow::new(inputs(OAuthConfig::default())).unwrap();
    flow.on_resource_metadata(status(404)).unwrap();
    flow.on_resource_metadata(status(404)).unwrap();
    assert!(matches!(flow.next_action(),
        Action::FetchAuthorizationServerMetadata(u) if u == "https://mcp.test/.well-known/oauth-authorization-server"));
    flow.on_authorization_server_metadata(status(404)).unwrap();
    assert!(matches!(flow.next_action(), Action::LookUpClient { .. }));
    flow.on_client_lookup(None).unwrap();
    let Action::Register { url, body } = flow.next_action() else {
        panic!()
    };
    assert_eq!(url, "https://mcp.test/register");
    assert_eq!(body["application_type"], "native");
    flow.on_registration(ok(json!({"client_id": "dyn"})))
        .unwrap();
    let url = authorize_url(&flow);
    assert!(url.starts_with("https://mcp.test/authorize?"), "{url}");
    assert_eq!(param(&url, "client_id").as_deref(), Some("dyn"));
}

#[test]
fn no_client_identity_says_what_to_configure() {
    let mut flow = to_authorize(inputs(OAuthConfig::default()), as_metadata(json!({})));
    assert!(matches!(flow.next_action(), Action::LookUpClient { .. }));
    let e = flow.on_client_lookup(None).unwrap_err();
    assert!(e.to_string().contains("oauth.clientId"), "{e}");
}

#[test]
fn cimd_only_when_advertised() {
    let config = OAuthConfig {
        client_metadata_url: Some("https://app.test/client.json".into()),
        ..OAuthConfig::default()
    };
    let flow = to_authorize(
        inputs(config.clone()),
        as_metadata(json!({"client_id_metadata_document_supported": true})),
    );
    assert_eq!(
        param(&authorize_url(&flow), "client_id").as_deref(),
        Some("https://app.test/client.json")
    );
    let flow = to_authorize(inputs(config), as_metadata(json!({})));
    assert!(matches!(flow.next_action(), Action::LookUpClient { .. }));
}

#[test]
fn the_previous_issuer_must_hold_for_a_pre_registered_client() {
    let mut i = inputs(pre_registered());
    i.previous_issuer = Some("https://old-as.test".into());
    let mut flow = Flow::new(i).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    let e = flow
        .on_authorization_server_metadata(ok(as_metadata(json!({}))))
        .unwrap_err();
    assert!(e.to_string().contains("changed"), "{e}");
}

#[test]
fn transitions_out_of_order_are_refused() {
    let mut flow = Flow::new(inputs(pre_registered())).unwrap();
    assert!(flow.on_token(status(200)).is_err());
    assert!(flow
        .on_redirect("http://127.0.0.1/callback?code=x")
        .is_err());
    assert!(matches!(
        flow.next_action(),
        Action::FetchResourceMetadata(_)
    ));
}

#[test]
fn debug_output_holds_no_secret() {
    let reply = ok(json!({"access_token": "at-secret", "refresh_token": "rt-secret"}));
    assert!(!format!("{reply:?}").contains("secret"));
    let mut flow = to_authorize(inputs(pre_registered()), as_metadata(json!({})));
    let state = param(&authorize_url(&flow), "state").unwrap();
    assert!(!format!("{flow:?}").contains(&state));
    flow.on_redirect(&format!(
        "http://127.0.0.1:5000/callback?code=the-code&state={state}"
    ))
    .unwrap();
    let shown = format!("{flow:?} {:?}", flow.next_action());
    assert!(
        !shown.contains("the-code") && !shown.contains(&state),
        "{shown}"
    );
    flow.on_token(reply).unwrap();
    let login = format!("{:?}", flow.into_login().unwrap());
    assert!(
        !login.contains("at-secret") && !login.contains("rt-secret"),
        "{login}"
    );
}

/// Registers (answering `reg`) at an AS listing `methods`, authorizes and returns the token
/// request.
fn registered_token_request(methods: serde_json::Value, reg: serde_json::Value) -> TokenRequest {
    let mut flow = to_authorize(
        inputs(OAuthConfig::default()),
        as_metadata(json!({
            "registration_endpoint": format!("{AS}/register"),
            "token_endpoint_auth_methods_supported": methods,
        })),
    );
    flow.on_client_lookup(None).unwrap();
    assert!(matches!(flow.next_action(), Action::Register { .. }));
    flow.on_registration(ok(reg)).unwrap();
    let url = authorize_url(&flow);
    let state = param(&url, "state").unwrap();
    flow.on_redirect(&format!(
        "http://127.0.0.1:5000/callback?code=c&state={state}"
    ))
    .unwrap();
    let Action::RequestToken(req) = flow.next_action() else {
        panic!("expected a token request")
    };
    req
}

#[test]
fn a_registration_that_issues_a_secret_but_names_no_method_follows_the_as_metadata() {
    // We asked for `none`; the AS lists `none` and issued a secret anyway, naming no method
    // (the conformance suite's AS, and real ones): a public client, the secret never sent.
    let req = registered_token_request(
        json!(["none"]),
        json!({"client_id": "dyn", "client_secret": "issued"}),
    );
    assert_eq!(req.param("client_id"), Some("dyn"));
    assert_eq!(req.param("client_secret"), None);
    assert!(req.basic_auth().is_none());
    // An AS that lists only secret-based methods: the issued secret is used as it lists.
    let req = registered_token_request(
        json!(["client_secret_post"]),
        json!({"client_id": "dyn", "client_secret": "issued"}),
    );
    assert_eq!(req.param("client_secret"), Some("issued"));
    // An AS without the list (RFC 8414's default, client_secret_basic) that issued a secret.
    let req = registered_token_request(
        serde_json::Value::Null,
        json!({"client_id": "dyn", "client_secret": "issued"}),
    );
    assert!(req.basic_auth().is_some());
    // A method named by the response wins over the metadata.
    let req = registered_token_request(
        json!(["none", "client_secret_post"]),
        json!({"client_id": "dyn", "client_secret": "issued", "token_endpoint_auth_method": "client_secret_post"}),
    );
    assert_eq!(req.param("client_secret"), Some("issued"));
    // No secret issued: public, whatever the list says.
    let req = registered_token_request(json!(["client_secret_basic"]), json!({"client_id": "dyn"}));
    assert_eq!(req.param("client_secret"), None);
    assert!(req.basic_auth().is_none());
}

#[test]
fn the_2025_03_26_fallback_takes_a_same_origin_issuer_and_no_other() {
    let legacy = |issuer: &str| {
        let mut flow = Flow::new(inputs(OAuthConfig::default())).unwrap();
        flow.on_resource_metadata(status(404)).unwrap();
        flow.on_resource_metadata(status(404)).unwrap();
        let doc = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "code_challenge_methods_supported": ["S256"],
        });
        flow.on_authorization_server_metadata(ok(doc)).map(|_| flow)
    };
    let mut flow = legacy("https://mcp.test/oauth").unwrap();
    assert!(matches!(flow.next_action(), Action::LookUpClient { .. }));
    flow.on_client_lookup(None).unwrap();
    let Action::Register { url, .. } = flow.next_action() else {
        panic!()
    };
    assert_eq!(url, "https://mcp.test/oauth/register");
    flow.on_registration(ok(json!({"client_id": "dyn"})))
        .unwrap();
    let url = authorize_url(&flow);
    assert!(
        url.starts_with("https://mcp.test/oauth/authorize?"),
        "{url}"
    );
    // RFC 9207: an `iss` on the redirect must be the issuer the document named.
    let state = param(&url, "state").unwrap();
    let e = flow
        .on_redirect(&format!(
            "http://127.0.0.1:5000/callback?code=c&state={state}&iss=https%3A%2F%2Fevil.test"
        ))
        .unwrap_err();
    assert!(e.to_string().contains("iss"), "{e}");
    // Another origin (or port) is still refused, as RFC 8414 §3.3 says.
    for other in ["https://evil.test/oauth", "https://mcp.test:8443/oauth"] {
        let e = legacy(other).expect_err(other);
        assert!(
            e.to_string().contains("names another issuer"),
            "{other}: {e}"
        );
    }
}
