//! Servers behind a real TLS server (OpenSSL's, through `socat`) with a certificate authority the
//! test makes: refused by default, saying which setting adds a CA; trusted through a server's
//! `caFile`, the host's CA file, `SSL_CERT_FILE` and `NODE_EXTRA_CA_CERTS`; a server that asks
//! for a client certificate gets one from `clientCert` / `clientKey`, and an encrypted key is
//! refused with what to do. The key never reaches a log.
#![cfg(feature = "tls")]

mod common;
#[cfg(feature = "oauth")]
#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use common::tls_front::{port_of, Pki, TlsFront};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, ConnectOptions, Endpoint, Error};
use serde_json::json;

fn options() -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    }
}

/// A test server behind TLS, and the PKI of its certificates (`None` where a component is
/// missing off CI).
fn tls_server(name: &str, client_certificates: bool) -> Option<(Pki, TestHttp, TlsFront)> {
    let pki = Pki::generate(name)?;
    let server = TestHttp::start(Behaviour::default());
    let front = TlsFront::start(&pki, port_of(&server.url()), client_certificates)?;
    Some((pki, server, front))
}

fn target(front: &TlsFront) -> HttpTarget {
    HttpTarget::new(front.url("127.0.0.1", "/mcp"))
}

fn echo(client: &Client) -> String {
    let out = client
        .call_tool("echo", json!({"message": "over TLS"}))
        .unwrap();
    out.text()
}

fn refusal(endpoint: &Endpoint, options: ConnectOptions) -> String {
    match Client::connect("tls", endpoint, options) {
        Ok(_) => panic!("connected to a server whose certificate is not trusted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_private_ca_is_refused_until_a_setting_adds_it() {
    let Some((pki, _server, front)) = tls_server("refused", false) else {
        return;
    };
    // Not in the system's store: refused, naming the server and the settings that add a CA.
    let why = refusal(&Endpoint::Http(target(&front)), options());
    assert!(why.contains("127.0.0.1"), "{why}");
    assert!(why.contains("TLS") && why.contains("caFile"), "{why}");

    // Another CA than the issuer changes nothing.
    let other = HttpTarget {
        ca_file: Some(pki.file("other-ca.pem")),
        ..target(&front)
    };
    let why = refusal(&Endpoint::Http(other), options());
    assert!(why.contains("caFile"), "{why}");

    // The server's own caFile.
    let own = HttpTarget {
        ca_file: Some(pki.file("ca.pem")),
        ..target(&front)
    };
    let client = Client::connect("tls", &Endpoint::Http(own), options()).unwrap();
    assert_eq!(echo(&client), "over TLS");
    client.close();

    // The host's, for every server.
    let mut opts = options();
    opts.http.ca_file = Some(pki.file("ca.pem"));
    let client = Client::connect("tls", &Endpoint::Http(target(&front)), opts).unwrap();
    assert_eq!(echo(&client), "over TLS");
    client.close();
}

#[test]
fn a_configs_ca_file_is_relative_to_the_project() {
    let Some((pki, _server, front)) = tls_server("config", false) else {
        return;
    };
    let config: ServerConfig = serde_json::from_value(json!({
        "url": front.url("127.0.0.1", "/mcp"),
        "caFile": "ca.pem",
    }))
    .unwrap();
    let endpoint = config.endpoint(&pki.dir).unwrap();
    let client = Client::connect("tls", &endpoint, options()).unwrap();
    assert_eq!(echo(&client), "over TLS");
    client.close();

    // A file that is not there is named, and nothing is connected.
    let endpoint = config.endpoint(&pki.dir.join("elsewhere")).unwrap();
    match Client::connect("tls", &endpoint, options()) {
        Err(Error::Config { message }) => {
            assert!(
                message.contains("caFile") && message.contains("ca.pem"),
                "{message}"
            )
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn the_environments_ca_settings_are_honoured() {
    let Some((pki, _server, front)) = tls_server("env", false) else {
        return;
    };
    let home = common::temp_dir("tls-env-home");
    let url = front.url("127.0.0.1", "/mcp");
    let tools = |env: &[(&str, &std::path::Path)]| {
        let mut cmd = common::cli(&home);
        cmd.args(["--no-cache", "tools", "--url", &url])
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("NODE_EXTRA_CA_CERTS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let out = tools(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("caFile"), "{stderr}");

    // NODE_EXTRA_CA_CERTS adds to the system's store; SSL_CERT_FILE replaces it.
    for var in ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"] {
        let out = tools(&[(var, &pki.file("ca.pem"))]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("echo"),
            "{var}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // SSL_CERT_DIR, as OpenSSL reads it: a directory of certificates.
    let dir = home.join("certs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(pki.file("ca.pem"), dir.join("ca.pem")).unwrap();
    let out = tools(&[("SSL_CERT_DIR", &dir)]);
    assert!(
        out.status.success(),
        "SSL_CERT_DIR: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_server_that_asks_for_a_client_certificate_gets_one() {
    common::capture_logs();
    let Some((pki, _server, front)) = tls_server("mtls", true) else {
        return;
    };
    let trusted = HttpTarget {
        ca_file: Some(pki.file("ca.pem")),
        ..target(&front)
    };
    // Without one: refused, saying what to set.
    let why = refusal(&Endpoint::Http(trusted.clone()), options());
    assert!(why.contains("clientCert"), "{why}");

    let with_cert = HttpTarget {
        client_cert: Some(pki.file("client.pem")),
        client_key: Some(pki.file("client.key")),
        ..trusted.clone()
    };
    let client = Client::connect("mtls", &Endpoint::Http(with_cert), options()).unwrap();
    assert_eq!(echo(&client), "over TLS");
    client.close();

    // An encrypted key is refused before anything is sent, with what to do.
    let encrypted = HttpTarget {
        client_cert: Some(pki.file("client.pem")),
        client_key: Some(pki.file("client-encrypted.key")),
        ..trusted
    };
    match Client::connect("mtls", &Endpoint::Http(encrypted), options()) {
        Err(Error::Config { message }) => {
            assert!(
                message.contains("encrypted") && message.contains("openssl pkey"),
                "{message}"
            )
        }
        other => panic!("{:?}", other.map(|_| ())),
    }

    // The key's material is in no log record, at any level.
    let key = std::fs::read_to_string(pki.file("client.key")).unwrap();
    for line in key
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
    {
        let found = common::logs(&line[..16]);
        assert!(found.is_empty(), "the client key was logged: {found:?}");
    }
}

#[cfg(feature = "oauth")]
#[test]
fn a_servers_oauth_requests_trust_its_ca_and_show_its_certificate() {
    use mcp_runtime::auth::{headless, OAuthOptions, OAuthProvider};
    use mcp_runtime::transport::AuthProvider as _;
    use oauth_server::{storage, Client as OAuthClient, OAuthServer, Script};

    let Some(pki) = Pki::generate("oauth") else {
        return;
    };
    let server = OAuthServer::start(Script {
        clients: vec![OAuthClient::secret(
            "machine",
            "client_secret_basic",
            "m-secret",
        )],
        ..Script::default()
    });
    let Some(front) = TlsFront::start(&pki, server.port(), true) else {
        return;
    };
    server.serve_as(&front.url("127.0.0.1", ""));
    let config =
        json!({"clientId": "machine", "clientSecret": "m-secret", "grant": "client_credentials"});
    let challenge = format!("Bearer resource_metadata=\"{}/prm\"", server.origin());
    let provider = |options: OAuthOptions, name: &str| {
        let options = OAuthOptions {
            request_timeout: Duration::from_secs(10),
            ..options
        };
        OAuthProvider::new(
            &server.url(),
            &config,
            storage(name),
            headless(options.clone()),
            options,
        )
        .unwrap()
    };

    // Discovery, metadata and the token request all go to the TLS front, which wants the
    // client certificate: with the server's CA and certificate they succeed.
    let full = OAuthOptions {
        ca_file: Some(pki.file("ca.pem")),
        client_cert: Some(pki.file("client.pem")),
        client_key: Some(pki.file("client.key")),
        ..OAuthOptions::default()
    };
    let p = provider(full, "tls-full");
    assert!(p.on_unauthorized(Some(&challenge), 0), "{:?}", p.refusal());
    assert!(p.authorization().is_some());
    assert_eq!(server.seen_at("/token").len(), 1);

    // Without the certificate the front refuses them, and the refusal says so.
    let no_cert = OAuthOptions {
        ca_file: Some(pki.file("ca.pem")),
        ..OAuthOptions::default()
    };
    let p = provider(no_cert, "tls-no-cert");
    assert!(!p.on_unauthorized(Some(&challenge), 0));
    let why = p.refusal().map(|e| e.to_string()).unwrap_or_default();
    assert!(why.contains("clientCert"), "{why}");
}

#[test]
fn https_goes_through_a_proxy_tunnel_and_is_verified_at_its_end() {
    let Some((pki, _server, front)) = tls_server("proxied", false) else {
        return;
    };
    let Some(proxy) = common::tinyproxy::Tinyproxy::start("tls", None) else {
        return;
    };
    let proxied = HttpTarget {
        proxy: Some(proxy.url(None)),
        ..target(&front)
    };
    // The tunnel is made, and the server's certificate is still checked through it.
    let why = refusal(&Endpoint::Http(proxied.clone()), options());
    assert!(
        why.contains("caFile") && why.contains("through the proxy"),
        "{why}"
    );
    let trusted = HttpTarget {
        ca_file: Some(pki.file("ca.pem")),
        ..proxied
    };
    let client = Client::connect("tls", &Endpoint::Http(trusted), options()).unwrap();
    assert_eq!(echo(&client), "over TLS");
    client.close();
    assert!(
        proxy.tunnelled_to(port_of(&front.url("127.0.0.1", "/"))),
        "{}",
        proxy.log()
    );
}

/// A certificate TLS would refuse to show (the v1 the common `openssl x509 -req` recipe makes),
/// or a key that is not the certificate's, is a configuration error naming the file, before
/// anything is sent: never a panic in the connecting thread, a server left "connecting", or a
/// command that says nothing and exits 0.
#[test]
fn a_client_certificate_tls_cannot_use_is_a_config_error_naming_it() {
    let Some((pki, _server, front)) = tls_server("mtls-v1", true) else {
        return;
    };
    pki.v1_client();
    let with = |cert: &str, key: &str| HttpTarget {
        ca_file: Some(pki.file("ca.pem")),
        client_cert: Some(pki.file(cert)),
        client_key: Some(pki.file(key)),
        ..target(&front)
    };
    let v1 = Endpoint::Http(with("client-v1.pem", "client-v1.key"));
    match Client::connect("v1", &v1, options()) {
        Err(Error::Config { message }) => assert!(
            message.contains("client-v1.pem")
                && message.contains("v1")
                && message.contains("extfile"),
            "{message}"
        ),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let mismatch = Endpoint::Http(with("client.pem", "other-ca.key"));
    match Client::connect("mismatch", &mismatch, options()) {
        Err(Error::Config { message }) => assert!(
            message.contains("other-ca.key") && message.contains("not the key of"),
            "{message}"
        ),
        other => panic!("{:?}", other.map(|_| ())),
    }

    // The command: every command that uses the server says so, in one line.
    let home = common::temp_dir("tls-v1-home");
    let url = front.url("127.0.0.1", "/mcp");
    let run = |command: &[&str]| {
        common::cli(&home)
            .args(["--no-cache", "--url", &url, "--ca-file"])
            .arg(pki.file("ca.pem"))
            .arg("--client-cert")
            .arg(pki.file("client-v1.pem"))
            .arg("--client-key")
            .arg(pki.file("client-v1.key"))
            .args(command)
            .output()
            .unwrap()
    };
    for command in [&["tools"][..], &["call", "echo", "message=hi"], &["status"]] {
        let out = run(command);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let said = format!("{stdout}{stderr}");
        assert!(
            said.contains("client-v1.pem") && said.contains("v1"),
            "{command:?}: {said}"
        );
        for wrong in ["connecting", "no tool named", "panicked"] {
            assert!(!said.contains(wrong), "{command:?}: {said}");
        }
        assert_ne!(out.status.code(), Some(0), "{command:?}: {said}");
        if command[0] != "status" {
            assert_eq!(out.status.code(), Some(2), "{command:?}: {said}");
            assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn the_command_line_takes_a_ca_and_a_client_certificate_for_its_url() {
    let Some((pki, _server, front)) = tls_server("cli", true) else {
        return;
    };
    let home = common::temp_dir("tls-cli-home");
    let url = front.url("127.0.0.1", "/mcp");
    let files = |with_cert: bool| {
        let mut args = vec![
            "--ca-file".to_owned(),
            pki.file("ca.pem").display().to_string(),
        ];
        if with_cert {
            for (flag, file) in [
                ("--client-cert", "client.pem"),
                ("--client-key", "client.key"),
            ] {
                args.push(flag.to_owned());
                args.push(pki.file(file).display().to_string());
            }
        }
        args
    };
    // --url: the server's config gets them (the manager's path).
    let out = common::cli(&home)
        .args(["--no-cache", "--url", &url])
        .args(files(true))
        .args(["call", "echo", "message=mutual"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "mutual\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // probe: its own endpoint; without the certificate the server refuses, saying why.
    let out = common::cli(&home)
        .arg("probe")
        .args(files(true))
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = common::cli(&home)
        .args(["--no-cache", "--url", &url])
        .args(files(false))
        .arg("tools")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("clientCert"),
        "{stderr}"
    );
    // They go with a URL only.
    let out = common::cli(&home)
        .args(files(false))
        .arg("tools")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&home);
}
