//! The OAuth client against an authorization server and a protected MCP resource of our own
//! (loopback, started per test): discovery, client identity, token endpoint authentication,
//! what is refused, and bad input.
#![cfg(feature = "oauth")]

#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::time::{Duration, Instant};

use mcp_runtime::auth::credential_id;
use mcp_runtime::auth::AuthStorage as _;
use mcp_runtime::Error;
use mcp_runtime::OAuthErrorKind;
use oauth_server::*;
use serde_json::json;

fn kind(e: &Error) -> OAuthErrorKind {
    match e {
        Error::OAuth { kind, .. } => *kind,
        other => panic!("not an OAuth error: {other}"),
    }
}

fn pre() -> serde_json::Value {
    json!({"clientId": "pre-registered"})
}

/// Logs in through `call` and checks the resource then accepts the token.
fn logs_in(script: Script, config: serde_json::Value, name: &str) -> OAuthServer {
    let server = OAuthServer::start(script);
    let p = provider(&server, config, name);
    call(&p, &server.url()).expect("logged in and served");
    assert!(p.status().logged_in);
    server
}

#[test]
fn prm_from_the_challenge_header() {
    let server = logs_in(Script::default(), pre(), "header");
    assert_eq!(server.seen_at("/prm").len(), 1);
    assert!(server
        .seen_at("/.well-known/oauth-protected-resource/mcp")
        .is_empty());
}

#[test]
fn prm_at_the_path_then_the_root_well_known() {
    let server = logs_in(
        Script {
            prm_at: PrmAt::PathWellKnown,
            ..Script::default()
        },
        pre(),
        "path-wk",
    );
    assert_eq!(
        server
            .seen_at("/.well-known/oauth-protected-resource/mcp")
            .len(),
        1
    );
    let server = logs_in(
        Script {
            prm_at: PrmAt::RootWellKnown,
            ..Script::default()
        },
        pre(),
        "root-wk",
    );
    assert_eq!(
        server
            .seen_at("/.well-known/oauth-protected-resource/mcp")
            .len(),
        1
    );
    assert_eq!(
        server
            .seen_at("/.well-known/oauth-protected-resource")
            .len(),
        1
    );
}

#[test]
fn as_metadata_in_the_spec_order_for_an_issuer_with_a_path() {
    let order = [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ];
    for (i, at) in [
        MetadataAt::OAuth,
        MetadataAt::OidcInserted,
        MetadataAt::OidcAppended,
    ]
    .into_iter()
    .enumerate()
    {
        let server = logs_in(
            Script {
                issuer_path: "/tenant1".into(),
                metadata_at: at,
                ..Script::default()
            },
            pre(),
            &format!("path-issuer-{i}"),
        );
        let tried: Vec<String> = server
            .seen()
            .into_iter()
            .map(|s| s.path)
            .filter(|p| {
                p.contains("openid-configuration") || p.contains("oauth-authorization-server")
            })
            .collect();
        assert_eq!(tried, order[..=i], "{at:?}");
    }
}

#[test]
fn as_metadata_in_the_spec_order_for_an_issuer_without_a_path_including_oidc() {
    for (i, at) in [MetadataAt::OAuth, MetadataAt::OidcInserted]
        .into_iter()
        .enumerate()
    {
        let server = logs_in(
            Script {
                metadata_at: at,
                ..Script::default()
            },
            pre(),
            &format!("root-issuer-{i}"),
        );
        let tried: Vec<String> = server
            .seen()
            .into_iter()
            .map(|s| s.path)
            .filter(|p| {
                p.contains("openid-configuration") || p.contains("oauth-authorization-server")
            })
            .collect();
        let order = [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
        ];
        assert_eq!(tried, order[..=i], "{at:?}");
    }
}

#[test]
fn a_2025_03_26_server_without_prm_uses_its_origin_then_the_default_endpoints() {
    // Metadata at the origin.
    let server = logs_in(
        Script {
            prm_at: PrmAt::Nowhere,
            ..Script::default()
        },
        pre(),
        "legacy-metadata",
    );
    assert_eq!(
        server
            .seen_at("/.well-known/oauth-authorization-server")
            .len(),
        1
    );
    // No metadata at all: /authorize, /token, /register, with dynamic registration.
    let server = logs_in(
        Script {
            prm_at: PrmAt::Nowhere,
            metadata_at: MetadataAt::Nowhere,
            ..Script::default()
        },
        json!({}),
        "legacy-defaults",
    );
    assert_eq!(server.seen_at("/register").len(), 1);
    assert_eq!(server.seen_at("/authorize").len(), 1);
    assert_eq!(server.seen_at("/token").len(), 1);
}

#[test]
fn a_pre_registered_client_does_not_register() {
    let server = logs_in(Script::default(), pre(), "pre");
    assert!(server.seen_at("/register").is_empty());
    assert_eq!(
        server.seen_at("/authorize")[0].query["client_id"],
        "pre-registered"
    );
}

#[test]
fn a_client_id_metadata_document_when_the_as_supports_it() {
    let doc = "http://127.0.0.1:9/client.json";
    let config = json!({"clientMetadataUrl": doc});
    let server = logs_in(
        Script {
            metadata_extra: json!({"client_id_metadata_document_supported": true}),
            ..Script::default()
        },
        config.clone(),
        "cimd",
    );
    assert!(server.seen_at("/register").is_empty());
    assert_eq!(server.seen_at("/authorize")[0].query["client_id"], doc);
    assert_eq!(server.seen_at("/token")[0].form["client_id"], doc);
    // Not advertised: dynamic registration instead.
    let server = logs_in(Script::default(), config, "cimd-not-advertised");
    assert_eq!(server.seen_at("/register").len(), 1);
}

#[test]
fn dynamic_registration_is_native_with_refresh_tokens_and_remembered() {
    let storage = storage("dcr");
    let server = OAuthServer::start(Script::default());
    let p = provider_with(
        &server,
        json!({}),
        storage.clone(),
        mcp_runtime::auth::headless(options()),
    );
    call(&p, &server.url()).unwrap();
    let reg = &server.seen_at("/register")[0].json;
    assert_eq!(reg["application_type"], "native");
    assert!(reg["grant_types"]
        .as_array()
        .unwrap()
        .contains(&json!("refresh_token")));
    assert!(reg["redirect_uris"][0]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    let stored = storage
        .get(&credential_id(&server.issuer(), &server.url()))
        .expect("stored per issuer and resource");
    assert_eq!(stored.extra["clientSource"], "registered");
    // A new login with this AS reuses the registration.
    p.login(None).unwrap();
    assert_eq!(server.seen_at("/register").len(), 1);
    assert_eq!(server.seen_at("/authorize").len(), 2);
}

#[test]
fn every_token_endpoint_auth_method() {
    use base64::Engine as _;
    use ring::signature::KeyPair as _;
    let dir = std::env::temp_dir().join(format!("mcp-oauth-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An ES256 key made here, and the RS256 fixture.
    let rng = ring::rand::SystemRandom::new();
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let es = ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
    let es_path = dir.join("es256.pem");
    let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    std::fs::write(
        &es_path,
        format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    let rs_path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oauth-rs256.pem");
    let rs_der = {
        let pem = std::fs::read_to_string(rs_path).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap()
    };
    let rs = ring::signature::RsaKeyPair::from_pkcs8(&rs_der).unwrap();
    let cases = [
        ("none", Client::public("c"), json!({"clientId": "c"})),
        (
            "client_secret_basic",
            Client::secret("c", "client_secret_basic", "basic-secret"),
            json!({"clientId": "c", "clientSecret": "basic-secret"}),
        ),
        (
            "client_secret_post",
            Client::secret("c", "client_secret_post", "post-secret"),
            json!({"clientId": "c", "clientSecret": "post-secret"}),
        ),
        (
            "private_key_jwt",
            Client {
                public_key: Some(("ES256".into(), es.public_key().as_ref().to_vec())),
                ..Client::secret("c", "private_key_jwt", "unused")
            },
            json!({"clientId": "c", "privateKeyFile": es_path, "signingAlgorithm": "ES256"}),
        ),
        (
            "private_key_jwt",
            Client {
                public_key: Some(("RS256".into(), rs.public().as_ref().to_vec())),
                ..Client::secret("c", "private_key_jwt", "unused")
            },
            json!({"clientId": "c", "privateKeyFile": rs_path, "signingAlgorithm": "RS256"}),
        ),
    ];
    for (i, (method, client, config)) in cases.into_iter().enumerate() {
        let server = logs_in(
            Script {
                clients: vec![client],
                metadata_extra: json!({"token_endpoint_auth_methods_supported": [method]}),
                ..Script::default()
            },
            config,
            &format!("auth-method-{i}"),
        );
        let token = &server.seen_at("/token")[0];
        assert_eq!(
            token.headers.contains_key("authorization"),
            method == "client_secret_basic",
            "{method}"
        );
        assert_eq!(
            token.form.contains_key("client_assertion"),
            method == "private_key_jwt"
        );
    }
}

#[test]
fn an_as_without_s256_is_refused_before_any_authorization() {
    let server = OAuthServer::start(Script {
        metadata_extra: json!({"code_challenge_methods_supported": null}),
        ..Script::default()
    });
    let e = call(&provider(&server, pre(), "no-pkce"), &server.url()).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Refused, "{e}");
    assert!(e.to_string().contains("S256"), "{e}");
    assert!(server.seen_at("/authorize").is_empty());
}

#[test]
fn a_prm_for_another_resource_is_refused() {
    let server = OAuthServer::start(Script {
        prm_resource: Some("http://127.0.0.1:1/other".into()),
        ..Script::default()
    });
    let e = call(&provider(&server, pre(), "prm-mismatch"), &server.url()).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Refused, "{e}");
    assert!(server.seen_at("/authorize").is_empty());
}

#[test]
fn iss_cases() {
    // (advertised, what the redirect carries, accepted)
    let cases = [
        (true, Iss::Correct, true),
        (true, Iss::Absent, false),
        (true, Iss::Wrong, false),
        (false, Iss::Correct, true),
        (false, Iss::Wrong, false),
        (false, Iss::Absent, true),
    ];
    for (i, (advertised, iss, accepted)) in cases.into_iter().enumerate() {
        let server = OAuthServer::start(Script {
            iss,
            metadata_extra: json!({"authorization_response_iss_parameter_supported": advertised}),
            ..Script::default()
        });
        let r = call(
            &provider(&server, pre(), &format!("iss-{i}")),
            &server.url(),
        );
        assert_eq!(r.is_ok(), accepted, "{advertised} {iss:?}: {r:?}");
        if let Err(e) = r {
            assert_eq!(kind(&e), OAuthErrorKind::Refused);
            assert!(server.seen_at("/token").is_empty(), "no code redeemed");
        }
    }
}

#[test]
fn metadata_for_another_issuer_is_discarded() {
    let server = OAuthServer::start(Script {
        metadata_issuer: Some("http://127.0.0.1:1".into()),
        ..Script::default()
    });
    let e = call(&provider(&server, pre(), "issuer-mismatch"), &server.url()).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Discovery, "{e}");
    assert!(e.to_string().contains("another issuer"), "{e}");
    assert!(server.seen_at("/authorize").is_empty());
}

#[test]
fn resource_on_both_the_authorization_and_the_token_request() {
    let server = logs_in(Script::default(), pre(), "resource");
    assert_eq!(
        server.seen_at("/authorize")[0].query["resource"],
        server.url()
    );
    assert_eq!(server.seen_at("/token")[0].form["resource"], server.url());
    // Tokens go to the resource only, never to the AS.
    for s in server.seen() {
        if s.path != "/mcp" {
            assert!(!s
                .headers
                .get("authorization")
                .is_some_and(|a| a.starts_with("Bearer")));
        }
    }
}

#[test]
fn scope_from_the_challenge_else_prm_else_omitted_and_offline_access_only_when_listed() {
    let scope = |script: Script, name: &str| {
        let server = logs_in(script, pre(), name);
        server.seen_at("/authorize")[0].query.get("scope").cloned()
    };
    let challenged = Script {
        challenge_scope: Some("mcp:write".into()),
        ..Script::default()
    };
    assert_eq!(
        scope(challenged, "scope-challenge").as_deref(),
        Some("mcp:write offline_access")
    );
    assert_eq!(
        scope(Script::default(), "scope-prm").as_deref(),
        Some("mcp:read offline_access")
    );
    let unlisted = Script {
        metadata_extra: json!({"scopes_supported": ["mcp:read"]}),
        ..Script::default()
    };
    assert_eq!(
        scope(unlisted, "scope-no-offline").as_deref(),
        Some("mcp:read")
    );
    let nothing = Script {
        prm_scopes: None,
        metadata_extra: json!({"scopes_supported": null}),
        ..Script::default()
    };
    assert_eq!(scope(nothing, "scope-omitted"), None);
}

#[test]
fn unsafe_authorization_urls_are_refused() {
    for (i, endpoint) in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://example.com/authorize",
    ]
    .into_iter()
    .enumerate()
    {
        let server = OAuthServer::start(Script {
            metadata_extra: json!({"authorization_endpoint": endpoint}),
            ..Script::default()
        });
        let e = call(
            &provider(&server, pre(), &format!("unsafe-{i}")),
            &server.url(),
        )
        .unwrap_err();
        assert_eq!(kind(&e), OAuthErrorKind::Refused, "{endpoint}: {e}");
    }
    // The server itself over plain http to a host that is not loopback.
    let e = mcp_runtime::auth::OAuthProvider::new(
        "http://mcp.example.com/mcp",
        &json!({}),
        storage("unsafe-server"),
        mcp_runtime::auth::no_login(),
        options(),
    )
    .unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Refused, "{e}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let fails = |script: Script, name: &str| {
        let server = OAuthServer::start(script);
        call(&provider(&server, pre(), name), &server.url()).unwrap_err()
    };
    let e = fails(
        Script {
            metadata_raw: Some("<html>not metadata</html>".into()),
            ..Script::default()
        },
        "malformed",
    );
    assert_eq!(kind(&e), OAuthErrorKind::Discovery);
    assert!(e.to_string().contains("malformed"), "{e}");
    let e = fails(
        Script {
            token_canned: Some((500, "text/html".into(), "<html>boom</html>".into())),
            ..Script::default()
        },
        "token-500",
    );
    assert_eq!(kind(&e), OAuthErrorKind::Token);
    assert!(e.to_string().contains("HTTP 500 (text/html)"), "{e}");
    let e = fails(
        Script {
            token_canned: Some((200, "text/html".into(), "<html>hi</html>".into())),
            ..Script::default()
        },
        "token-html",
    );
    assert!(e.to_string().contains("not a token response"), "{e}");
    let e = fails(
        Script {
            deny: true,
            ..Script::default()
        },
        "denied",
    );
    assert_eq!(kind(&e), OAuthErrorKind::Denied);
    assert!(e.to_string().contains("access_denied"), "{e}");
}

#[test]
fn an_as_that_never_answers_is_a_typed_error_within_its_bound() {
    let server = OAuthServer::start(Script {
        hang: vec!["/.well-known/oauth-authorization-server".into()],
        ..Script::default()
    });
    let mut o = options();
    o.request_timeout = Duration::from_secs(1);
    let p = mcp_runtime::auth::OAuthProvider::new(
        &server.url(),
        &pre(),
        storage("hang"),
        mcp_runtime::auth::headless(o.clone()),
        o,
    )
    .unwrap();
    let started = Instant::now();
    let e = p.login(None).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Unreachable, "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_changed_authorization_server_with_a_pre_registered_client_is_an_error() {
    let storage = storage("changed-as");
    let first = OAuthServer::start(Script::default());
    let headless = mcp_runtime::auth::headless(options());
    let p = provider_with(&first, pre(), storage.clone(), headless.clone());
    call(&p, &first.url()).unwrap();
    // Same resource URL, other issuer: a PRM pointing elsewhere is simulated with an index
    // entry naming another issuer.
    let index = mcp_runtime::auth::resource_index_id(&first.url());
    let mut entry = storage.get(&index).unwrap();
    entry
        .extra
        .insert("issuer".into(), json!("https://old-as.example"));
    storage.set(&index, entry).unwrap();
    let p = provider_with(&first, pre(), storage, headless);
    let e = p.login(None).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Refused, "{e}");
    assert!(e.to_string().contains("changed"), "{e}");
}
