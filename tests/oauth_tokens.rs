//! Using tokens against our own loopback AS and protected resource: refresh (before expiry, on
//! a 401, rotated), step-up and its limit, the machine grants (client credentials, SEP-990),
//! the interactive loopback path with the test playing the browser, and secrets kept out of
//! logs at trace level.
#![cfg(feature = "oauth")]

mod common;
#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::time::Duration;

use mcp_runtime::auth::AuthStorage as _;
use mcp_runtime::auth::{browser_with, credential_id, headless, OAuthOptions, OAuthProvider};
use mcp_runtime::transport::AuthProvider as _;
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

fn grants(server: &OAuthServer, grant_type: &str) -> usize {
    server
        .seen_at("/token")
        .iter()
        .filter(|s| s.form.get("grant_type").map(String::as_str) == Some(grant_type))
        .count()
}

#[test]
fn tokens_are_refreshed_before_they_expire_and_a_rotated_refresh_token_replaces_the_old() {
    let server = OAuthServer::start(Script {
        expires_in: 30,
        ..Script::default()
    });
    let storage = storage("refresh-early");
    let options = OAuthOptions {
        refresh_margin: Duration::from_secs(60),
        ..options()
    };
    let make = || {
        OAuthProvider::new(
            &server.url(),
            &pre(),
            storage.clone(),
            headless(options.clone()),
            options.clone(),
        )
        .unwrap()
    };
    let p = make();
    p.login(None).unwrap();
    // A token living less than the margin is not refreshed on every request.
    let header = p.authorization().unwrap();
    assert_eq!(p.authorization().unwrap(), header);
    assert_eq!(grants(&server, "refresh_token"), 0);
    // Stored tokens that expire within the margin: the next request's header comes from a
    // refresh.
    let id = credential_id(&server.issuer(), &server.url());
    let mut first = storage.get(&id).unwrap();
    first.expires_at = Some(first.expires_at.unwrap() - 25_000);
    first.extra.remove("refreshAt");
    storage.set(&id, first.clone()).unwrap();
    let p = make();
    let header = p.authorization().unwrap();
    assert_eq!(grants(&server, "refresh_token"), 1);
    assert_ne!(header, format!("Bearer {}", first.access_token));
    let second = storage.get(&id).unwrap();
    assert_eq!(header, format!("Bearer {}", second.access_token));
    assert_ne!(second.refresh_token, first.refresh_token, "rotated");
    assert_eq!(
        server.refresh_tokens(),
        vec![second.refresh_token.clone().unwrap()]
    );
    call(&p, &server.url()).unwrap();
    assert_eq!(server.seen_at("/authorize").len(), 1, "no new login");
    assert_eq!(grants(&server, "refresh_token"), 1);
}

#[test]
fn a_401_refreshes_once_then_logs_in_again() {
    let server = OAuthServer::start(Script::default());
    let p = provider(&server, pre(), "refresh-401");
    call(&p, &server.url()).unwrap();
    server.expire_access_tokens();
    call(&p, &server.url()).unwrap();
    assert_eq!(grants(&server, "refresh_token"), 1);
    assert_eq!(
        server.seen_at("/authorize").len(),
        1,
        "a refresh, not a login"
    );
}

#[test]
fn a_refused_refresh_leads_to_a_new_login_and_a_failing_token_endpoint_loses_nothing() {
    let server = OAuthServer::start(Script::default());
    let storage = storage("refresh-refused");
    let p = provider_with(&server, pre(), storage.clone(), headless(options()));
    call(&p, &server.url()).unwrap();
    let id = credential_id(&server.issuer(), &server.url());
    // The token endpoint breaks: the refresh fails, the stored tokens stay.
    server.script(|s| s.token_canned = Some((500, "text/html".into(), "<h1>down</h1>".into())));
    let before = storage.get(&id).unwrap();
    let e = p.refresh().unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::Token, "{e}");
    assert_eq!(storage.get(&id).unwrap(), before);
    assert!(p.status().logged_in);
    // The AS forgets the refresh token: a 401 then refreshes, is refused, and logs in again.
    server.script(|s| s.token_canned = None);
    server.expire_access_tokens();
    server.script(|s| s.rotate_refresh = true);
    let stale = before.refresh_token.clone().unwrap();
    call(&p, &server.url()).unwrap(); // refreshes (rotating `stale` away)
    let mut cred = storage.get(&id).unwrap();
    cred.refresh_token = Some(stale);
    storage.set(&id, cred).unwrap();
    let p = provider_with(&server, pre(), storage.clone(), headless(options()));
    server.expire_access_tokens();
    call(&p, &server.url()).unwrap();
    assert_eq!(server.seen_at("/authorize").len(), 2, "logged in again");
}

#[test]
fn step_up_asks_for_the_union_of_granted_and_challenged_scopes() {
    let server = OAuthServer::start(Script {
        required_scope: Some("admin".into()),
        ..Script::default()
    });
    let p = provider(&server, pre(), "step-up");
    call(&p, &server.url()).unwrap();
    let authorizations = server.seen_at("/authorize");
    assert_eq!(authorizations.len(), 2);
    assert_eq!(authorizations[0].query["scope"], "mcp:read offline_access");
    assert_eq!(
        authorizations[1].query["scope"],
        "mcp:read offline_access admin"
    );
    assert!(p.status().scopes.contains(&"admin".to_owned()));
}

#[test]
fn step_up_stops_after_its_retry_limit() {
    let server = OAuthServer::start(Script {
        required_scope: Some("superpower".into()),
        grantable: Some(vec!["mcp:read".into(), "offline_access".into()]),
        ..Script::default()
    });
    let p = provider(&server, pre(), "step-up-limit");
    let e = call(&p, &server.url()).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::RetryLimit, "{e}");
    // The first login, then two step-ups (the default limit), then no more.
    assert_eq!(server.seen_at("/authorize").len(), 3);
}

#[test]
fn client_credentials_with_a_secret_and_with_an_es256_assertion() {
    let server = OAuthServer::start(Script {
        clients: vec![Client::secret("machine", "client_secret_basic", "m-secret")],
        ..Script::default()
    });
    let config =
        json!({"clientId": "machine", "clientSecret": "m-secret", "grant": "client_credentials"});
    let p = provider(&server, config, "cc-secret");
    call(&p, &server.url()).unwrap();
    assert_eq!(grants(&server, "client_credentials"), 1);
    assert!(server.seen_at("/authorize").is_empty());
    assert_eq!(server.seen_at("/token")[0].form["resource"], server.url());

    use base64::Engine as _;
    use ring::signature::KeyPair as _;
    let rng = ring::rand::SystemRandom::new();
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let pair = ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
    let path = std::env::temp_dir().join(format!("mcp-oauth-cc-{}.pem", std::process::id()));
    let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    std::fs::write(
        &path,
        format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n"),
    )
    .unwrap();
    let server = OAuthServer::start(Script {
        clients: vec![Client {
            public_key: Some(("ES256".into(), pair.public_key().as_ref().to_vec())),
            ..Client::secret("machine", "private_key_jwt", "unused")
        }],
        metadata_extra: json!({"token_endpoint_auth_methods_supported": ["private_key_jwt"]}),
        ..Script::default()
    });
    let config =
        json!({"clientId": "machine", "grant": "client_credentials", "privateKeyFile": path});
    let p = provider(&server, config, "cc-jwt");
    call(&p, &server.url()).unwrap();
    let token = &server.seen_at("/token")[0];
    assert_eq!(token.form["grant_type"], "client_credentials");
    assert!(token.form.contains_key("client_assertion"));
}

#[test]
fn enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag() {
    // The same test server plays the enterprise IdP (its /token does the token exchange).
    let server = OAuthServer::start(Script {
        clients: vec![Client::secret(
            "mcp-client",
            "client_secret_basic",
            "mcp-secret",
        )],
        id_token: Some("eyJ-the-users-id-token".into()),
        ..Script::default()
    });
    let config = json!({
        "clientId": "mcp-client", "clientSecret": "mcp-secret",
        "enterprise": {
            "idpTokenEndpoint": format!("{}/token", server.origin()),
            "idToken": "eyJ-the-users-id-token",
            "idpClientId": "idp-client",
        }
    });
    let p = provider(&server, config, "sep-990");
    call(&p, &server.url()).unwrap();
    let tokens = server.seen_at("/token");
    assert_eq!(tokens.len(), 2);
    let exchange = &tokens[0].form;
    assert_eq!(
        exchange["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(
        exchange["requested_token_type"],
        "urn:ietf:params:oauth:token-type:id-jag"
    );
    assert_eq!(
        exchange["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(exchange["audience"], server.issuer());
    assert_eq!(exchange["resource"], server.url());
    let bearer = &tokens[1].form;
    assert_eq!(
        bearer["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert!(bearer["assertion"].starts_with("jag-"));
    assert!(server.seen_at("/authorize").is_empty());
}

#[test]
fn the_interactive_path_receives_the_redirect_on_the_loopback_listener() {
    let server = OAuthServer::start(Script::default());
    let (pages, page) = crossbeam_channel::unbounded::<(u16, String)>();
    // The test plays the browser: it opens the authorization URL, which redirects to our
    // loopback listener; a stray request first (a favicon) must not end the login.
    let opener = move |url: &str| {
        let url = url.to_owned();
        let pages = pages.clone();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .timeout_global(Some(Duration::from_secs(10)))
                .build()
                .into();
            let r = agent.get(&url).call().unwrap();
            let location = r.headers()["location"].to_str().unwrap().to_owned();
            let origin = location.split("/callback").next().unwrap().to_owned();
            let stray = agent.get(format!("{origin}/favicon.ico")).call().unwrap();
            pages
                .send((stray.status().as_u16(), String::new()))
                .unwrap();
            let mut r = agent.get(&location).call().unwrap();
            let status = r.status().as_u16();
            pages
                .send((status, r.body_mut().read_to_string().unwrap()))
                .unwrap();
        });
        Ok(())
    };
    let browser = browser_with(opener, None);
    let p = provider_with(
        &server,
        json!({"clientId": "pre-registered", "callbackPort": 0}),
        storage("interactive"),
        browser,
    );
    call(&p, &server.url()).unwrap();
    let (stray, _) = page.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(stray, 404);
    let (status, body) = page.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("You can close this tab"), "{body}");
    let redirect = &server.seen_at("/authorize")[0].query["redirect_uri"];
    assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"));
}

#[test]
fn the_browser_path_is_bounded() {
    let server = OAuthServer::start(Script::default());
    let browser = browser_with(|_| Ok(()), None); // a user who never comes back
    let options = OAuthOptions {
        login_timeout: Duration::from_secs(1),
        ..options()
    };
    let p = OAuthProvider::new(
        &server.url(),
        &pre(),
        storage("browser-bounded"),
        browser,
        options,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let e = p.login(None).unwrap_err();
    assert_eq!(kind(&e), OAuthErrorKind::LoginRequired, "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn no_secret_reaches_the_logs_at_trace_level() {
    common::capture_logs();
    let server = OAuthServer::start(Script {
        clients: vec![Client::secret(
            "conf",
            "client_secret_post",
            "the-client-secret",
        )],
        metadata_extra: json!({"token_endpoint_auth_methods_supported": ["client_secret_post"]}),
        expires_in: 30,
        id_token: Some("eyJ-secret-id-token".into()),
        ..Script::default()
    });
    let config = json!({"clientId": "conf", "clientSecret": "the-client-secret"});
    let p = provider(&server, config, "secrets");
    call(&p, &server.url()).unwrap();
    p.refresh().unwrap();
    server.expire_access_tokens();
    call(&p, &server.url()).unwrap();
    let _ = format!("{p:?} {:?}", p.status());
    // The enterprise grant too.
    let config = json!({
        "clientId": "conf", "clientSecret": "the-client-secret",
        "enterprise": {"idpTokenEndpoint": format!("{}/token", server.origin()),
                       "idToken": "eyJ-secret-id-token", "idpClientId": "idp"}
    });
    call(&provider(&server, config, "secrets-sep990"), &server.url()).unwrap();
    let mut secrets = server.secrets();
    for s in server.seen() {
        for k in ["code_verifier", "state", "code_challenge"] {
            secrets.extend(s.form.get(k).cloned());
            secrets.extend(s.query.get(k).cloned());
        }
    }
    assert!(secrets.len() > 8, "{}", secrets.len());
    assert!(
        !common::logs("oauth").is_empty(),
        "the flow logged something"
    );
    for secret in secrets {
        let leaked = common::logs(&secret);
        assert!(leaked.is_empty(), "a secret in the logs: {leaked:?}");
    }
    // The exchanges with the AS bypass `ureq`'s request logging (which dumps every byte at
    // trace level): nothing of them is in its records.
    let port = server.origin().rsplit(':').next().unwrap().to_owned();
    for needle in ["/token", "/authorize", "/register", "well-known"] {
        let dumped: Vec<_> = common::logs(needle)
            .into_iter()
            .filter(|r| r.target.starts_with("ureq") && r.message.contains(&port))
            .collect();
        assert!(dumped.is_empty(), "{needle}: {dumped:?}");
    }
}

#[test]
fn a_refresh_answered_without_a_new_refresh_token_keeps_the_old_one() {
    let server = OAuthServer::start(Script {
        rotate_refresh: false,
        ..Script::default()
    });
    let storage = storage("refresh-kept");
    let options = options();
    let p = OAuthProvider::new(
        &server.url(),
        &pre(),
        storage.clone(),
        headless(options.clone()),
        options.clone(),
    )
    .unwrap();
    p.login(None).unwrap();
    let id = credential_id(&server.issuer(), &server.url());
    let first = storage.get(&id).unwrap();
    assert!(first.refresh_token.is_some());
    for round in 1..=2 {
        p.refresh().unwrap();
        let now = storage.get(&id).unwrap();
        assert_ne!(now.access_token, first.access_token, "round {round}");
        assert_eq!(
            now.refresh_token, first.refresh_token,
            "round {round}: kept"
        );
    }
    assert_eq!(grants(&server, "refresh_token"), 2);
    call(&p, &server.url()).unwrap();
}

#[test]
fn a_servers_oauth_requests_go_through_its_proxy() {
    let Some(proxy) = common::tinyproxy::Tinyproxy::start("oauth", None) else {
        return;
    };
    let server = OAuthServer::start(Script::default());
    let options = OAuthOptions {
        proxy: Some(proxy.url(None)),
        ..options()
    };
    let p = OAuthProvider::new(
        &server.url(),
        &pre(),
        storage("proxied"),
        headless(options.clone()),
        options,
    )
    .unwrap();
    p.login(None).unwrap();
    assert!(p.status().logged_in);
    // Discovery, the authorization (followed headlessly) and the token request each came
    // through the proxy, on a tunnel of its own (OAuth's connections are not kept).
    let tunnels = proxy
        .requests()
        .iter()
        .filter(|r| r.starts_with("CONNECT "))
        .count();
    let seen = server.seen();
    assert!(seen.iter().any(|s| s.path == "/token"), "no token request");
    assert_eq!(tunnels, seen.len(), "{:?}", proxy.requests());
}
