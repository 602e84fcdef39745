//! An OAuth authorization server and a protected MCP resource of our own, on one
//! `127.0.0.1:0` listener (std only), scriptable per test: where the metadata is, what it says,
//! how the AS answers, which client authentication it demands. It records every request.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "oauth_as.rs"]
mod authorization;
#[path = "oauth_client.rs"]
mod client;
// Also `common::http_request` in the test binaries that include `common` as well: the same
// small file, compiled twice there.
#[allow(clippy::duplicate_mod)]
#[path = "http_request.rs"]
mod http_request;

use authorization::{authorize, token};
#[allow(unused_imports)]
pub use client::*;

/// Where the server publishes its Protected Resource Metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PrmAt {
    /// At `/prm`, named by `resource_metadata` in the 401.
    #[default]
    Header,
    /// At `/.well-known/oauth-protected-resource/mcp` (no header parameter).
    PathWellKnown,
    /// At `/.well-known/oauth-protected-resource` (no header parameter).
    RootWellKnown,
    /// Nowhere (a 2025-03-26 server).
    Nowhere,
}

/// Where the AS publishes its metadata (relative to the issuer's path, as the spec orders).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MetadataAt {
    /// RFC 8414: `/.well-known/oauth-authorization-server<issuer path>`.
    #[default]
    OAuth,
    /// OIDC with the path inserted: `/.well-known/openid-configuration<issuer path>`.
    OidcInserted,
    /// OIDC with the path appended: `<issuer path>/.well-known/openid-configuration`.
    OidcAppended,
    /// Nowhere (default endpoints of 2025-03-26).
    Nowhere,
}

/// What the authorization redirect says about `iss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Iss {
    #[default]
    Correct,
    Absent,
    Wrong,
}

/// A client the AS knows.
#[derive(Clone, Debug)]
pub struct Client {
    pub id: String,
    /// `none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`.
    pub method: String,
    pub secret: Option<String>,
    /// For `private_key_jwt`: the ES256 (uncompressed point) or RS256 (RSAPublicKey DER) key.
    pub public_key: Option<(String, Vec<u8>)>,
}

impl Client {
    pub fn public(id: &str) -> Client {
        Client {
            id: id.into(),
            method: "none".into(),
            secret: None,
            public_key: None,
        }
    }
    pub fn secret(id: &str, method: &str, secret: &str) -> Client {
        Client {
            id: id.into(),
            method: method.into(),
            secret: Some(secret.into()),
            public_key: None,
        }
    }
}

/// The per-test script.
#[derive(Clone, Debug)]
pub struct Script {
    pub prm_at: PrmAt,
    /// The PRM `resource` (default: the server's URL).
    pub prm_resource: Option<String>,
    pub prm_scopes: Option<Vec<String>>,
    /// `scope` in the 401 challenge.
    pub challenge_scope: Option<String>,
    /// A scope every MCP request needs (else 403 insufficient_scope naming it).
    pub required_scope: Option<String>,
    /// The issuer's path (`/tenant1`), or none.
    pub issuer_path: String,
    pub metadata_at: MetadataAt,
    /// Overrides the metadata's `issuer`.
    pub metadata_issuer: Option<String>,
    /// Fields merged into the AS metadata (`null` removes one).
    pub metadata_extra: Value,
    /// Answer the metadata with this raw body (malformed metadata).
    pub metadata_raw: Option<String>,
    pub iss: Iss,
    /// Redirect with `error=access_denied`.
    pub deny: bool,
    /// Answer `/token` with this status, content type and body.
    pub token_canned: Option<(u16, String, String)>,
    pub expires_in: u64,
    pub rotate_refresh: bool,
    /// Issue refresh tokens.
    pub refresh_tokens: bool,
    /// Scopes the AS grants (others requested are dropped); `None`: all.
    pub grantable: Option<Vec<String>>,
    pub clients: Vec<Client>,
    /// DCR: register clients.
    pub registration: bool,
    /// The ID token the IdP accepts (SEP-990).
    pub id_token: Option<String>,
    /// Paths that are never answered.
    pub hang: Vec<String>,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            prm_at: PrmAt::Header,
            prm_resource: None,
            prm_scopes: Some(vec!["mcp:read".into()]),
            challenge_scope: None,
            required_scope: None,
            issuer_path: String::new(),
            metadata_at: MetadataAt::OAuth,
            metadata_issuer: None,
            metadata_extra: json!({}),
            metadata_raw: None,
            iss: Iss::Correct,
            deny: false,
            token_canned: None,
            expires_in: 3600,
            rotate_refresh: true,
            refresh_tokens: true,
            grantable: None,
            clients: vec![Client::public("pre-registered")],
            registration: true,
            id_token: None,
            hang: Vec::new(),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    pub headers: HashMap<String, String>,
    pub form: HashMap<String, String>,
    pub json: Value,
}

struct Code {
    client_id: String,
    challenge: String,
    redirect_uri: String,
    scope: String,
    resource: String,
}

#[derive(Clone)]
struct Issued {
    scope: String,
    expires: Instant,
}

struct State {
    script: Mutex<Script>,
    port: u16,
    seen: Mutex<Vec<Seen>>,
    codes: Mutex<HashMap<String, Code>>,
    access: Mutex<HashMap<String, Issued>>,
    refresh: Mutex<HashMap<String, (String, String)>>,
    jags: Mutex<Vec<String>>,
    next: AtomicUsize,
    stop: AtomicBool,
    /// Every token, code and secret handed out (for the log test).
    handed_out: Mutex<Vec<String>>,
    /// The origin it says it is at, when something (a TLS front) stands before it.
    public: Mutex<Option<String>>,
}

impl State {
    fn origin(&self) -> String {
        let public = self.public.lock().unwrap().clone();
        public.unwrap_or_else(|| format!("http://127.0.0.1:{}", self.port))
    }
}

/// The running server; dropping it stops it.
pub struct OAuthServer {
    state: Arc<State>,
}

fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| v.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
                continue;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn form(text: &str) -> HashMap<String, String> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn enc(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl OAuthServer {
    pub fn start(script: Script) -> OAuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            script: Mutex::new(script),
            port,
            seen: Mutex::new(Vec::new()),
            codes: Mutex::new(HashMap::new()),
            access: Mutex::new(HashMap::new()),
            refresh: Mutex::new(HashMap::new()),
            jags: Mutex::new(Vec::new()),
            next: AtomicUsize::new(1),
            stop: AtomicBool::new(false),
            handed_out: Mutex::new(Vec::new()),
            public: Mutex::new(None),
        });
        http_request::accept_each(
            listener,
            Arc::clone(&state),
            |s| s.stop.load(Ordering::SeqCst),
            serve,
        );
        OAuthServer { state }
    }

    pub fn origin(&self) -> String {
        self.state.origin()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.state.port
    }

    /// From now on, its metadata and challenges name `origin` (a front it is reached through).
    pub fn serve_as(&self, origin: &str) {
        *self.state.public.lock().unwrap() = Some(origin.to_owned());
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.origin())
    }

    pub fn issuer(&self) -> String {
        let path = self.state.script.lock().unwrap().issuer_path.clone();
        format!("{}{path}", self.origin())
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The requests to `path`.
    pub fn seen_at(&self, path: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path == path).collect()
    }

    /// Changes the script.
    pub fn script(&self, f: impl FnOnce(&mut Script)) {
        f(&mut self.state.script.lock().unwrap());
    }

    /// Makes every access token issued so far expired (the resource refuses them).
    pub fn expire_access_tokens(&self) {
        for t in self.state.access.lock().unwrap().values_mut() {
            t.expires = Instant::now();
        }
    }

    /// Every token, code and secret the server handed out or was configured with.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = self.state.handed_out.lock().unwrap().clone();
        let script = self.state.script.lock().unwrap();
        out.extend(script.clients.iter().filter_map(|c| c.secret.clone()));
        out.extend(script.id_token.clone());
        out
    }

    /// The currently valid refresh tokens.
    pub fn refresh_tokens(&self) -> Vec<String> {
        self.state.refresh.lock().unwrap().keys().cloned().collect()
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.state.port));
    }
}

type Answer = (u16, Vec<(String, String)>, String);

fn json_answer(status: u16, body: Value) -> Answer {
    (
        status,
        vec![("Content-Type".into(), "application/json".into())],
        body.to_string(),
    )
}

fn serve(state: &State, conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let Some(request) = http_request::read_request(&mut reader) else {
        return;
    };
    let (method, target, headers, body) = (
        request.method,
        request.target,
        request.headers,
        request.body,
    );
    let body = String::from_utf8_lossy(&body).into_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let seen = Seen {
        method,
        path: path.to_owned(),
        query: form(query),
        form: if headers
            .get("content-type")
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
        {
            form(&body)
        } else {
            HashMap::new()
        },
        json: serde_json::from_str(&body).unwrap_or(Value::Null),
        headers,
    };
    state.seen.lock().unwrap().push(seen.clone());
    if state.script.lock().unwrap().hang.contains(&seen.path) {
        while !state.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        return;
    }
    let (status, headers, body) = route(state, &seen);
    let mut out = conn;
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body.as_bytes());
    let _ = out.flush();
}

fn route(state: &State, req: &Seen) -> Answer {
    let script = state.script.lock().unwrap().clone();
    let origin = state.origin();
    let issuer = format!("{origin}{}", script.issuer_path);
    let ip = &script.issuer_path;
    let metadata_path = match script.metadata_at {
        MetadataAt::OAuth => Some(format!("/.well-known/oauth-authorization-server{ip}")),
        MetadataAt::OidcInserted => Some(format!("/.well-known/openid-configuration{ip}")),
        MetadataAt::OidcAppended => Some(format!("{ip}/.well-known/openid-configuration")),
        MetadataAt::Nowhere => None,
    };
    let prm_path = match script.prm_at {
        PrmAt::Header => Some("/prm"),
        PrmAt::PathWellKnown => Some("/.well-known/oauth-protected-resource/mcp"),
        PrmAt::RootWellKnown => Some("/.well-known/oauth-protected-resource"),
        PrmAt::Nowhere => None,
    };
    let p = req.path.as_str();
    if p == "/mcp" {
        return resource(state, &script, req, &origin);
    }
    if Some(p) == prm_path {
        return json_answer(
            200,
            json!({
                "resource": script.prm_resource.clone().unwrap_or(format!("{origin}/mcp")),
                "authorization_servers": [issuer],
                "scopes_supported": script.prm_scopes,
            }),
        );
    }
    if metadata_path.as_deref() == Some(p) {
        if let Some(raw) = &script.metadata_raw {
            return (
                200,
                vec![("Content-Type".into(), "application/json".into())],
                raw.clone(),
            );
        }
        let mut m = json!({
            "issuer": script.metadata_issuer.clone().unwrap_or(issuer.clone()),
            "authorization_endpoint": format!("{origin}/authorize"),
            "token_endpoint": format!("{origin}/token"),
            "registration_endpoint": format!("{origin}/register"),
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["mcp:read", "mcp:write", "admin", "offline_access"],
        });
        for (k, v) in script.metadata_extra.as_object().unwrap() {
            if v.is_null() {
                m.as_object_mut().unwrap().remove(k);
            } else {
                m[k] = v.clone();
            }
        }
        return json_answer(200, m);
    }
    match p {
        "/authorize" => authorize(state, &script, req, &issuer),
        "/token" => token(state, &script, req, &issuer),
        "/register" if script.registration => {
            let id = format!("dyn-{}", state.next.fetch_add(1, Ordering::SeqCst));
            state
                .script
                .lock()
                .unwrap()
                .clients
                .push(Client::public(&id));
            json_answer(
                201,
                json!({"client_id": id, "token_endpoint_auth_method": "none"}),
            )
        }
        _ => (404, Vec::new(), "not found".into()),
    }
}

fn resource(state: &State, script: &Script, req: &Seen, origin: &str) -> Answer {
    let mut challenge = String::from("Bearer realm=\"mcp\"");
    if script.prm_at == PrmAt::Header {
        challenge.push_str(&format!(", resource_metadata=\"{origin}/prm\""));
    }
    if let Some(s) = &script.challenge_scope {
        challenge.push_str(&format!(", scope=\"{s}\""));
    }
    let token = req
        .headers
        .get("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or("");
    let issued = state.access.lock().unwrap().get(token).cloned();
    let Some(issued) = issued.filter(|i| i.expires > Instant::now()) else {
        return (
            401,
            vec![("WWW-Authenticate".into(), challenge)],
            String::new(),
        );
    };
    if let Some(needed) = &script.required_scope {
        if !issued.scope.split_whitespace().any(|s| s == needed) {
            let mut c = format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\"");
            if script.prm_at == PrmAt::Header {
                c.push_str(&format!(", resource_metadata=\"{origin}/prm\""));
            }
            return (403, vec![("WWW-Authenticate".into(), c)], String::new());
        }
    }
    // Enough MCP for a client to connect, list and call.
    let Some(id) = req.json.get("id").cloned() else {
        return (202, Vec::new(), String::new());
    };
    let result = match req.json["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "protected", "version": "1"}}),
        Some("tools/list") => {
            json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]})
        }
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": format!("scope {}", issued.scope)}]})
        }
        _ => json!({}),
    };
    json_answer(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn redirect(to: String) -> Answer {
    (302, vec![("Location".into(), to)], String::new())
}
