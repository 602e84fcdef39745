//! An MCP Registry of the test's own on 127.0.0.1, serving the `v0.1` API from a list of
//! entries as the registry answers them (`{"server": server.json, "_meta": {...}}`): a search
//! (entries whose `isLatest` is true and whose name holds the query; more than four are two
//! pages, by cursor), a server's versions, one version, the latest; and files under `/files/`
//! (a bundle an entry points at). Any other path answers 500.

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::http_request::{accept_each, read_request, respond};

/// The cursor of a search's second page.
pub const SECOND_PAGE: &str = "io.github.user/remote-weather:2.1.0";

/// `server.json` as a registry lists it, with its status and whether it is the latest.
pub fn listed(document: &str, status: &str, latest: bool) -> Value {
    json!({
        "server": serde_json::from_str::<Value>(document).unwrap(),
        "_meta": {"io.modelcontextprotocol.registry/official": {
            "status": status,
            "publishedAt": "2025-12-01T10:00:00Z",
            "updatedAt": "2025-12-01T10:00:00Z",
            "isLatest": latest
        }}
    })
}

struct State {
    entries: Vec<Value>,
    files: Mutex<Vec<(String, Vec<u8>)>>,
    requests: Mutex<Vec<String>>,
    stopped: AtomicBool,
}

/// The registry; stops when dropped.
pub struct TestRegistry {
    pub url: String,
    state: Arc<State>,
}

impl TestRegistry {
    pub fn start(entries: Vec<Value>) -> TestRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            entries,
            files: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
        });
        accept_each(
            listener,
            Arc::clone(&state),
            |s| s.stopped.load(Ordering::SeqCst),
            serve,
        );
        TestRegistry { url, state }
    }

    /// Serves `bytes` at `/files/<name>`; its URL.
    pub fn serve_file(&self, name: &str, bytes: Vec<u8>) -> String {
        let path = format!("/files/{name}");
        self.state.files.lock().unwrap().push((path.clone(), bytes));
        format!("{}{path}", self.url)
    }

    /// Every request's target, in order.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().unwrap().clone()
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

fn query(target: &str, key: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.replace("%2F", "/").replace("%3A", ":"))
    })
}

fn is_latest(v: &Value) -> bool {
    v["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"] == true
}

fn serve(state: &State, conn: TcpStream) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    state.requests.lock().unwrap().push(request.target.clone());
    let target = request.target.as_str();
    let path = target.split('?').next().unwrap();
    let file = (state.files.lock().unwrap().iter())
        .find(|(p, _)| p == path)
        .map(|(_, bytes)| bytes.clone());
    if let Some(bytes) = file {
        use std::io::Write;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
            bytes.len()
        );
        let _ = out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(&bytes));
        return;
    }
    let all = state.entries.clone();
    let name_of = |v: &Value| v["server"]["name"].as_str().unwrap().to_owned();
    let (status, body) = if path == "/v0.1/servers" {
        let search = query(target, "search").unwrap_or_default();
        let found: Vec<Value> = all
            .into_iter()
            .filter(|v| is_latest(v) && name_of(v).contains(&search))
            .collect();
        let (page, next) = match query(target, "cursor").as_deref() {
            None if found.len() > 4 => (found[..4].to_vec(), Some(SECOND_PAGE)),
            None => (found, None),
            Some(SECOND_PAGE) => (found[4.min(found.len())..].to_vec(), None),
            Some(_) => (Vec::new(), None),
        };
        let mut metadata = json!({"count": page.len()});
        if let Some(next) = next {
            metadata["nextCursor"] = json!(next);
        }
        (200, json!({"servers": page, "metadata": metadata}))
    } else if let Some(rest) = path.strip_prefix("/v0.1/servers/") {
        let (name, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let name = name.replace("%2F", "/");
        let versions: Vec<Value> = all.into_iter().filter(|v| name_of(v) == name).collect();
        match (tail, versions.is_empty()) {
            (_, true) => (404, json!({"error": "Server not found"})),
            ("versions", false) => (
                200,
                json!({"servers": versions, "metadata": {"count": versions.len()}}),
            ),
            ("versions/latest", false) => match versions.iter().find(|v| is_latest(v)) {
                Some(v) => (200, v.clone()),
                None => (404, json!({"error": "Server not found"})),
            },
            (other, false) => {
                let wanted = other.trim_start_matches("versions/");
                match versions.iter().find(|v| v["server"]["version"] == wanted) {
                    Some(v) => (200, v.clone()),
                    None => (404, json!({"error": "Server not found"})),
                }
            }
        }
    } else {
        (500, json!({"error": "the registry is down"}))
    };
    respond(
        &mut out,
        status,
        &[("Content-Type", "application/json".to_owned())],
        &body.to_string(),
    );
}
