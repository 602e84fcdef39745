//! The flow's machine grants and DPoP decisions, transition by transition (no I/O: each test
//! plays the network). The shared helpers are `flow_tests`'.

use serde_json::json;

use super::tests::{as_metadata, inputs, ok, prm, to_authorize, AS, SERVER};
use super::*;
use crate::auth::config::{EnterpriseConfig, Grant};
use crate::auth::token::{ID_JAG, JWT_BEARER, TOKEN_EXCHANGE};
use crate::auth::Secret;

#[test]
fn enterprise_exchanges_the_id_token_then_presents_the_id_jag() {
    let config = OAuthConfig {
        client_id: Some("mcp-client".into()),
        client_secret: Some(Secret::new("mcp-secret")),
        grant: Grant::Enterprise,
        enterprise: Some(EnterpriseConfig {
            idp_token_endpoint: "https://idp.test/token".into(),
            id_token: Secret::new("id-token"),
            idp_client_id: "idp-client".into(),
            idp_client_secret: None,
        }),
        ..OAuthConfig::default()
    };
    let mut m = as_metadata(json!({}));
    m.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    let mut flow = to_authorize(inputs(config), m);
    let Action::RequestToken(exchange) = flow.next_action() else {
        panic!()
    };
    assert_eq!(exchange.url, "https://idp.test/token");
    assert_eq!(exchange.param("grant_type"), Some(TOKEN_EXCHANGE));
    assert_eq!(exchange.param("audience"), Some(AS));
    assert_eq!(exchange.param("subject_token"), Some("id-token"));
    assert_eq!(exchange.param("resource"), Some(SERVER));
    flow.on_token(ok(
        json!({"access_token": "jag", "token_type": "N_A", "issued_token_type": ID_JAG}),
    ))
    .unwrap();
    let Action::RequestToken(bearer) = flow.next_action() else {
        panic!()
    };
    assert_eq!(bearer.url, "https://as.test/token");
    assert_eq!(bearer.param("grant_type"), Some(JWT_BEARER));
    assert_eq!(bearer.param("assertion"), Some("jag"));
    assert!(bearer.basic_auth().is_some());
    flow.on_token(ok(json!({"access_token": "at", "token_type": "bearer"})))
        .unwrap();
    assert!(flow.into_login().is_some());
}

#[test]
fn workload_identity_presents_the_platforms_jwt_as_a_jwt_bearer_grant() {
    let config = OAuthConfig {
        client_id: Some("workload".into()),
        grant: Grant::WorkloadIdentity,
        workload_token: Some(Secret::new("eyJ-platform-jwt")),
        ..OAuthConfig::default()
    };
    let mut m = as_metadata(json!({"token_endpoint_auth_methods_supported": ["none"]}));
    m.as_object_mut()
        .unwrap()
        .remove("code_challenge_methods_supported");
    let mut with_token = inputs(config);
    with_token.workload_token = Some(Secret::new("eyJ-platform-jwt"));
    let mut flow = to_authorize(with_token, m);
    let Action::RequestToken(request) = flow.next_action() else {
        panic!()
    };
    assert_eq!(request.url, "https://as.test/token");
    assert_eq!(request.param("grant_type"), Some(JWT_BEARER));
    assert_eq!(request.param("assertion"), Some("eyJ-platform-jwt"));
    assert_eq!(request.param("client_id"), Some("workload"));
    assert_eq!(request.param("resource"), Some(SERVER));
    assert!(!format!("{request:?}").contains("eyJ-platform-jwt"));
    flow.on_token(ok(json!({"access_token": "at", "token_type": "bearer"})))
        .unwrap();
    assert!(flow.into_login().is_some());
}

fn machine(dpop: crate::auth::dpop::DpopMode) -> OAuthConfig {
    OAuthConfig {
        client_id: Some("m".into()),
        client_secret: Some(Secret::new("s")),
        grant: Grant::ClientCredentials,
        dpop,
        ..OAuthConfig::default()
    }
}

#[test]
fn dpop_is_used_where_offered_required_where_asked_and_checked_in_the_answer() {
    use crate::auth::dpop::DpopMode;
    let offers = as_metadata(json!({"dpop_signing_alg_values_supported": ["ES256"]}));
    let token = |flow: &mut Flow| match flow.next_action() {
        Action::RequestToken(r) => r,
        other => panic!("{other:?}"),
    };
    // Offered: the token request carries a proof, and a DPoP token is bound.
    let mut flow = to_authorize(inputs(machine(DpopMode::Auto)), offers.clone());
    assert!(token(&mut flow).dpop);
    flow.on_token(ok(json!({"access_token": "at", "token_type": "DPoP"})))
        .unwrap();
    assert!(flow.into_login().unwrap().dpop);
    // Off: no proof, plain bearer.
    let mut flow = to_authorize(inputs(machine(DpopMode::Off)), offers.clone());
    assert!(!token(&mut flow).dpop);
    // A DPoP token to a request without a proof is refused.
    let e = flow
        .on_token(ok(json!({"access_token": "at", "token_type": "DPoP"})))
        .unwrap_err();
    assert!(e.to_string().contains("without a proof"), "{e}");
    // Required: an authorization server without it is refused, and so is a bearer answer.
    let mut flow = Flow::new(inputs(machine(DpopMode::Require))).unwrap();
    flow.on_resource_metadata(ok(prm())).unwrap();
    let e = flow
        .on_authorization_server_metadata(ok(as_metadata(json!({}))))
        .unwrap_err();
    assert!(e.to_string().contains("require"), "{e}");
    let mut flow = to_authorize(inputs(machine(DpopMode::Require)), offers);
    let e = flow
        .on_token(ok(json!({"access_token": "at", "token_type": "Bearer"})))
        .unwrap_err();
    assert!(e.to_string().contains("require"), "{e}");
}
