//! OAuth against a real authorization server: `oidc-provider` (npm, OpenID-certified), set up
//! as an MCP authorization server by `tests/interop/oidc_as.mjs` in front of a protected MCP
//! server, all on 127.0.0.1. The client is driven as users drive it: the `mcp` CLI (`login`,
//! `call`, `status`), processes sharing one token store, and a real browser (headless Chromium
//! through `puppeteer-core`, `tests/interop/browser_login.mjs`) on the server's own login and
//! consent pages; the library for the step-up.
//!
//! Needs node, the two npm packages (installed into `.interop/oidc` on first use) and, for the
//! browser tests, Debian's `chromium`; each test skips, saying so, where one cannot be had, and
//! fails in CI.
#![cfg(feature = "oauth")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::npm;
use mcp_runtime::auth::{headless, OAuthOptions};
use mcp_runtime::config::provider_for;
use mcp_runtime::config::{FileAuthStorage, ServerConfig};
use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, Endpoint};
use serde_json::{json, Value};

const OIDC_PROVIDER: &str = "oidc-provider@9.13.3";

/// The npm packages' folder, installed on first use.
fn modules() -> Option<PathBuf> {
    if !npm::has_node() {
        return npm::missing("node is not installed; the oidc-provider tests did not run");
    }
    npm::install(
        "oidc",
        &[OIDC_PROVIDER, npm::PUPPETEER_CORE],
        "node_modules/puppeteer-core/lib/puppeteer/puppeteer-core.js",
    )
    .map(|_| npm::interop_dir().join("oidc/node_modules"))
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// The authorization server and the MCP server it protects. Dropping it ends them.
struct AuthServer {
    child: Child,
    issuer: String,
    mcp: String,
}

impl AuthServer {
    /// Starts them; `interactive` shows the provider's login and consent pages instead of
    /// approving by itself.
    fn start(interactive: bool) -> Option<AuthServer> {
        let modules = modules()?;
        let mut child = Command::new("node")
            .arg(script("oidc_as.mjs"))
            .arg(modules.join("oidc-provider/lib/index.js"))
            .arg(if interactive { "interactive" } else { "auto" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start node");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            // The first line says where it listens; the rest (the provider's notices) is
            // drained, so the server never writes to a closed pipe.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.try_send(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the authorization server did not start");
        let ready: Value = serde_json::from_str(&line).expect("the server's first line");
        Some(AuthServer {
            child,
            issuer: ready["issuer"].as_str().unwrap().to_owned(),
            mcp: ready["mcp"].as_str().unwrap().to_owned(),
        })
    }

    /// POSTs `/control/<what>` and returns its JSON answer.
    fn control(&self, what: &str) -> Value {
        let mut response = ureq::post(&format!("{}/control/{what}", self.issuer))
            .send_empty()
            .expect("control request");
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
    }

    fn stats(&self) -> Value {
        self.control("stats")
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A home with a config naming the protected server `prot`.
fn home(name: &str, server: &AuthServer) -> PathBuf {
    home_with(name, server, json!({}))
}

/// [`home`] with this `oauth` object in the server's config.
fn home_with(name: &str, server: &AuthServer, oauth: Value) -> PathBuf {
    let home = common::temp_dir(name);
    let config =
        json!({"mcpServers": {"prot": {"type": "http", "url": server.mcp, "oauth": oauth}}});
    std::fs::write(home.join("mcp.json"), config.to_string()).unwrap();
    home
}

/// The CLI with `home`'s config, run to its end (bounded).
fn mcp(home: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = common::cli(home);
    cmd.arg("--config").arg(home.join("mcp.json")).args(args);
    npm::output_within(cmd, Duration::from_secs(90)).expect("the CLI ended within 90 s")
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The refresh token stored in `home`'s token store.
fn stored_refresh_token(home: &Path) -> String {
    let store: Value =
        serde_json::from_slice(&std::fs::read(home.join(".mcp-runtime/auth.json")).unwrap())
            .unwrap();
    store["credentials"]
        .as_object()
        .unwrap()
        .values()
        .find_map(|c| c["refreshToken"].as_str().map(str::to_owned))
        .expect("a stored refresh token")
}

#[test]
fn login_refresh_rotation_and_revocation_against_oidc_provider() {
    let Some(server) = AuthServer::start(false) else {
        return;
    };
    // Plain bearer tokens (the provider offers DPoP; the DPoP test below takes it): the
    // provider rotates a public client's refresh tokens only when they are not bound to a key.
    let home = home_with("oidc-lifecycle", &server, json!({"dpop": "off"}));
    // Discovery (RFC 9728, RFC 8414), registration (RFC 7591), PKCE, resource indicators.
    let out = mcp(&home, &["login", "prot", "--headless"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("logged in to prot (2 tools)"),
        "{}",
        text(&out)
    );
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("hello mcp-user"), "{}", text(&out));

    // The access token stops being accepted: the client refreshes and the refresh token
    // rotates (the provider rotates a public client's on every use).
    let first = stored_refresh_token(&home);
    server.control("expire");
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(out.status.success(), "{}", text(&out));
    let second = stored_refresh_token(&home);
    assert_ne!(first, second, "the rotated refresh token is stored");
    let stats = server.stats();
    assert_eq!(stats["refreshes"], 1, "{stats}");
    assert_eq!(stats["grantsRevoked"], 0, "{stats}");

    // The grant is revoked at the authorization server: the server needs a login, and says why.
    server.control("revoke");
    server.control("expire");
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(!out.status.success(), "{}", text(&out));
    let out = mcp(&home, &["status"]);
    let status = text(&out);
    assert!(status.contains("needs login"), "{status}");
    assert!(status.contains("invalid_grant"), "{status}");
    let out = mcp(&home, &["login", "prot", "--headless"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(out.status.success(), "{}", text(&out));
    let stats = server.stats();
    assert_eq!(stats["dpopProofsChecked"], 0, "{stats}");
}

#[test]
fn dpop_bound_tokens_with_nonces_against_oidc_provider() {
    let Some(server) = AuthServer::start(false) else {
        return;
    };
    // The provider offers DPoP and wants a nonce at its token endpoint; the MCP server checks
    // every proof and wants a nonce of its own.
    let home = home("oidc-dpop", &server);
    let out = mcp(&home, &["login", "prot", "--headless"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("hello mcp-user"), "{}", text(&out));
    let stats = server.stats();
    assert!(stats["dpopProofsChecked"].as_u64().unwrap() >= 2, "{stats}");
    assert!(
        stats["dpopNonceChallenges"].as_u64().unwrap() >= 1,
        "{stats}"
    );
    assert_eq!(stats["bearerRequests"], 0, "{stats}");
    assert_eq!(stats["dpopRefusals"], json!([]), "{stats}");
    assert!(
        stats["grantErrors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e == "use_dpop_nonce"),
        "only the token endpoint's nonce challenges: {stats}"
    );

    // The key is kept with the tokens (another process refreshes with it), in the 0600 store,
    // and never logged, even at trace.
    let store_path = home.join(".mcp-runtime/auth.json");
    let store: Value = serde_json::from_slice(&std::fs::read(&store_path).unwrap()).unwrap();
    let key = store["credentials"]
        .as_object()
        .unwrap()
        .values()
        .find_map(|c| c["dpopKey"].as_str().map(str::to_owned))
        .expect("the DPoP key is stored with the tokens");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&store_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the store is the user's only: {mode:o}");
    server.control("expire");
    let mut cmd = common::cli(&home);
    cmd.arg("--config")
        .arg(home.join("mcp.json"))
        .args(["call", "mcp_prot_whoami"])
        .env("RUST_LOG", "trace");
    let out = npm::output_within(cmd, Duration::from_secs(90)).expect("the CLI ended");
    assert!(out.status.success(), "{}", text(&out));
    let stats = server.stats();
    assert_eq!(stats["refreshes"], 1, "{stats}");
    assert_eq!(stats["dpopRefusals"], json!([]), "{stats}");
    let logged = text(&out);
    // The private scalar (past the PKCS#8 header, which every P-256 key shares).
    assert!(
        !logged.contains(&key[50..80]),
        "the DPoP key reached the log"
    );
    assert!(logged.contains("TRACE"), "the log was at trace level");
    let out = mcp(&home, &["auth", "status"]);
    assert!(
        text(&out).contains("bound to a key (DPoP)"),
        "{}",
        text(&out)
    );
}

#[test]
fn two_processes_refreshing_at_once_spend_the_refresh_token_once() {
    let Some(server) = AuthServer::start(false) else {
        return;
    };
    let home = home("oidc-two-processes", &server);
    let out = mcp(&home, &["login", "prot", "--headless"]);
    assert!(out.status.success(), "{}", text(&out));
    // Both processes meet the expired token before either refresh completes: the token
    // endpoint holds every request until both were refused.
    server.control("hold?stale=2");
    server.control("expire");
    let spawn = || {
        let mut cmd = common::cli(&home);
        cmd.arg("--config")
            .arg(home.join("mcp.json"))
            .args(["call", "mcp_prot_whoami"]);
        std::thread::spawn(move || {
            npm::output_within(cmd, Duration::from_secs(90)).expect("the CLI ended")
        })
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert!(a.status.success(), "first: {}", text(&a));
    assert!(b.status.success(), "second: {}", text(&b));
    let stats = server.stats();
    assert!(
        stats["staleRejections"].as_u64().unwrap() >= 2,
        "both processes met the expired token: {stats}"
    );
    assert_eq!(
        stats["grantsRevoked"], 0,
        "a refresh token was spent twice: {stats}"
    );
    assert_eq!(stats["refreshes"], 1, "one refresh served both: {stats}");
    assert_eq!(stats["maxTokenRequestsInFlight"], 1, "{stats}");
}

#[test]
fn step_up_to_a_scope_the_server_asks_for() {
    let Some(server) = AuthServer::start(false) else {
        return;
    };
    let dir = common::temp_dir("oidc-step-up");
    let config = ServerConfig {
        transport: Some("http".into()),
        url: Some(server.mcp.clone()),
        oauth: Some(json!({})),
        ..Default::default()
    };
    let storage = Arc::new(FileAuthStorage::new(dir.join("auth.json")));
    let provider = provider_for(
        &config,
        storage,
        headless(OAuthOptions::default()),
        OAuthOptions::default(),
    )
    .unwrap()
    .expect("an OAuth provider for an HTTP server");
    let endpoint = Endpoint::Url(HttpTarget {
        url: server.mcp.clone(),
        headers: Vec::new(),
        auth: Some(Arc::new(provider.clone())),
        proxy: None,
        ca_file: None,
        client_cert: None,
        client_key: None,
    });
    let client = Client::connect("prot", &endpoint, common::options()).expect("connect");
    assert_eq!(provider.status().scopes, vec!["mcp:read"]);
    let out = client
        .call_tool("admin", json!({}))
        .expect("the call after the step-up");
    assert_eq!(out.text(), "admin granted");
    let mut scopes = provider.status().scopes;
    scopes.sort();
    assert_eq!(scopes, vec!["mcp:admin", "mcp:read"]);
    assert_eq!(
        server.stats()["authorizations"],
        2,
        "one login, one step-up"
    );
    client.close();
}

/// The browser's environment: the script, puppeteer-core and Chromium.
fn browser_env(cmd: &mut Command, paste: bool) -> Option<()> {
    let chromium = npm::chromium()?;
    let modules = modules()?;
    cmd.env(
        "PUPPETEER_CORE",
        modules.join("puppeteer-core/lib/puppeteer/puppeteer-core.js"),
    )
    .env("CHROMIUM", chromium)
    .env(
        "BROWSER",
        format!("node {}", script("browser_login.mjs").display()),
    );
    if paste {
        cmd.env("BROWSER_LOGIN_PASTE", "1");
    }
    Some(())
}

#[test]
fn login_in_a_real_browser_on_the_authorization_servers_own_pages() {
    let Some(server) = AuthServer::start(true) else {
        return;
    };
    let home = home("oidc-browser", &server);
    let mut cmd = common::cli(&home);
    cmd.arg("--config")
        .arg(home.join("mcp.json"))
        .args(["login", "prot"]);
    if browser_env(&mut cmd, false).is_none() {
        return;
    }
    let out = npm::output_within(cmd, Duration::from_secs(120)).expect("login ended");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("logged in to prot"), "{}", text(&out));
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(text(&out).contains("hello mcp-user"), "{}", text(&out));
}

#[test]
fn login_over_ssh_takes_the_redirect_pasted_back() {
    let Some(server) = AuthServer::start(true) else {
        return;
    };
    let home = home("oidc-paste", &server);
    // The person's browser, on "another machine": it prints where it ended instead of loading it.
    let mut browser = Command::new("node");
    if browser_env(&mut browser, true).is_none() {
        return;
    }
    let mut login = common::cli(&home);
    std::os::unix::process::CommandExt::process_group(&mut login, 0);
    let mut login = login
        .arg("--config")
        .arg(home.join("mcp.json"))
        .args(["login", "prot", "--no-browser"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = login.stderr.take().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the CLI printed the authorization URL");
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
    };
    browser.arg(script("browser_login.mjs")).arg(&url);
    let out = npm::output_within(browser, Duration::from_secs(90)).expect("the browser ended");
    assert!(out.status.success(), "{}", text(&out));
    let landed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(landed.contains("/callback?"), "{landed}");
    let mut stdin = login.stdin.take().unwrap();
    writeln!(stdin, "{landed}").unwrap();
    let out = npm::output_within_child(login, Duration::from_secs(60)).expect("login ended");
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("logged in to prot"), "{}", text(&out));
    let out = mcp(&home, &["call", "mcp_prot_whoami"]);
    assert!(text(&out).contains("hello mcp-user"), "{}", text(&out));
}
