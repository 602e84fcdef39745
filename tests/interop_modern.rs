//! Interop with real 2026-07-28 servers: FastMCP 4.2 (PyPI) over stdio and HTTP, and the
//! TypeScript SDK v2 (`@modelcontextprotocol/server`, npm) over stdio and HTTP in its default
//! and `legacy: 'reject'` modes. Each is installed into the ignored `.interop/` folder on first
//! use; without python3 or node the tests say so loudly and pass.

mod common;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mcp_runtime::protocol::ProtocolVersion;
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::{json, Value};

const FASTMCP: &str = "4.2.3";
const TS_SERVER: &str = "2.4.0";

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".interop")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// The venv python with FastMCP installed, or `None` (said loudly).
fn fastmcp_python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = interop_dir().join("fastmcp-venv");
            let python = venv.join("bin/python");
            let ready = || {
                Command::new(&python)
                    .args(["-c", &format!("import fastmcp,sys; sys.exit(fastmcp.__version__ != '{FASTMCP}')")])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !ready() {
                let made = Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status();
                let installed = made.is_ok_and(|s| s.success())
                    && Command::new(venv.join("bin/pip"))
                        .args(["install", "-q", &format!("fastmcp=={FASTMCP}")])
                        .status()
                        .is_ok_and(|s| s.success());
                if !installed || !ready() {
                    eprintln!("\n=== SKIPPED: FastMCP {FASTMCP} could not be installed (python3 -m venv + pip); the FastMCP interop tests did not run ===\n");
                    return None;
                }
            }
            Some(python)
        })
        .clone()
}

/// The TS SDK server fixture, installed beside its package, or `None` (said loudly).
fn ts_script() -> Option<PathBuf> {
    static SCRIPT: OnceLock<Option<PathBuf>> = OnceLock::new();
    SCRIPT
        .get_or_init(|| {
            if Command::new("node").arg("--version").output().is_err() {
                eprintln!("\n=== SKIPPED: node is not installed; the TypeScript SDK v2 interop tests did not run ===\n");
                return None;
            }
            let prefix = interop_dir().join("ts-sdk");
            let package = prefix.join("node_modules/@modelcontextprotocol/server/package.json");
            let current = std::fs::read_to_string(&package)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|p| p["version"] == TS_SERVER);
            if !current {
                let status = Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--no-package-lock", "--prefix"])
                    .arg(&prefix)
                    .arg(format!("@modelcontextprotocol/server@{TS_SERVER}"))
                    .status();
                if !status.is_ok_and(|s| s.success()) {
                    eprintln!("\n=== SKIPPED: npm install of @modelcontextprotocol/server@{TS_SERVER} failed; the TypeScript SDK v2 interop tests did not run ===\n");
                    return None;
                }
            }
            // ESM resolves packages from the script's folder: the fixture goes beside them.
            let script = prefix.join("ts_server.mjs");
            std::fs::copy(fixture("ts_server.mjs"), &script).expect("copy the TS fixture");
            Some(script)
        })
        .clone()
}

fn options() -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(60),
        request_timeout: Duration::from_secs(60),
        ..ConnectOptions::default()
    }
}

/// Connects, checks the era, lists and calls `echo`.
fn check(name: &str, endpoint: &Endpoint) {
    let client = Client::connect(name, endpoint, options()).expect("connect");
    assert_eq!(
        client.protocol_version(),
        ProtocolVersion::V2026_07_28,
        "{name}"
    );
    let tools = client.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"), "{name}: {tools:?}");
    let out = client
        .call_tool("echo", json!({"message": "interop"}))
        .unwrap();
    assert_eq!(out.text(), "interop", "{name}");
    assert!(!out.is_error());
    client.close();
}

/// A server process listening on HTTP; killed on drop.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    /// Starts `cmd` with a free port as its last argument and waits (bounded) until it accepts.
    fn start(mut cmd: Command) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = cmd
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the HTTP server");
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                log_line(&line);
            }
        });
        // Ready when it answers HTTP, not when its port accepts: a server still starting (its
        // app's startup under CPU load) can accept a connection and then reset it.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !answers_http(port) {
            assert!(Instant::now() < deadline, "the server never answered HTTP");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the server exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Whether something on `port` answers a plain `GET /` with an HTTP status line.
fn answers_http(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    let mut head = [0u8; 8];
    conn.write_all(request.as_bytes()).is_ok()
        && conn.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.")
}

fn log_line(line: &str) {
    if std::env::var_os("MCP_INTEROP_VERBOSE").is_some() {
        eprintln!("server: {line}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn fastmcp_over_stdio_speaks_2026_07_28() {
    let Some(python) = fastmcp_python() else {
        return;
    };
    check("fastmcp-stdio", &fastmcp_stdio(&python));
}

/// The FastMCP fixture server over stdio.
fn fastmcp_stdio(python: &std::path::Path) -> Endpoint {
    let script = fixture("fastmcp_server.py");
    Endpoint::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned(), "stdio".to_owned()],
    )
}

/// FastMCP starting slower than the probe waits (Python importing it on a loaded machine): its
/// late answer is dropped, its refusal of `initialize` names 2026-07-28, and discovery again
/// finds it.
#[test]
fn fastmcp_over_stdio_slower_than_the_probe_is_still_spoken_to_at_2026_07_28() {
    let Some(python) = fastmcp_python() else {
        return;
    };
    let endpoint = fastmcp_stdio(&python);
    // No Python server answers within a millisecond of its start.
    let options = ConnectOptions {
        probe_timeout: Duration::from_millis(1),
        ..options()
    };
    let client = Client::connect("fastmcp-slow", &endpoint, options).expect("connect");
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    let out = client
        .call_tool("echo", json!({"message": "late"}))
        .unwrap();
    assert_eq!(out.text(), "late");
    client.close();
}

#[test]
fn fastmcp_over_http_speaks_2026_07_28() {
    let Some(python) = fastmcp_python() else {
        return;
    };
    let mut cmd = Command::new(python);
    cmd.arg(fixture("fastmcp_server.py")).arg("http");
    let server = HttpServer::start(cmd);
    check("fastmcp-http", &Endpoint::url(server.url("/mcp")));
}

#[test]
fn the_typescript_sdk_over_stdio_speaks_2026_07_28_in_both_modes() {
    let Some(script) = ts_script() else { return };
    for legacy in ["serve", "reject"] {
        let endpoint = Endpoint::stdio(
            "node",
            [
                script.to_string_lossy().into_owned(),
                "stdio".to_owned(),
                legacy.to_owned(),
            ],
        );
        check(&format!("ts-stdio-{legacy}"), &endpoint);
    }
}

#[test]
fn the_typescript_sdk_over_http_speaks_2026_07_28_in_both_modes() {
    let Some(script) = ts_script() else { return };
    for legacy in ["serve", "reject"] {
        let mut cmd = Command::new("node");
        cmd.arg(&script).arg("http").arg(legacy);
        let server = HttpServer::start(cmd);
        // A URL without a transport named: the case that used to end in "HTTP 405".
        check(
            &format!("ts-http-{legacy}"),
            &Endpoint::url(server.url("/mcp")),
        );
    }
}

/// The example CLI's `probe --json` shows the version a host sees.
#[test]
fn probe_json_shows_2026_07_28() {
    let Some(script) = ts_script() else { return };
    let home = std::env::temp_dir().join(format!("mcp-interop-modern-{}", std::process::id()));
    let out = common::cli(&home)
        .args(["--json", "probe", "--", "node"])
        .arg(&script)
        .args(["stdio", "reject"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["protocolVersion"], "2026-07-28", "{report}");
    assert_eq!(report["server"], "ts-interop");
    assert!(out.status.success(), "{report}");
}
