//! OpenTelemetry across implementations: the official Python SDK (`mcp` 2.3.0, whose server
//! spans are parented from `params._meta`) with the Python OpenTelemetry SDK makes its SERVER
//! span a child of our CLIENT span, over stdio and Streamable HTTP; and `mcp call` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` exports its spans and metrics over OTLP/HTTP to a receiver
//! that decodes them with the official protobuf definitions (tests/interop/otlp_receiver.py).
//! The Python packages go into the ignored `.interop/otel-venv` on first use (`.ci/run` makes
//! it first); without them the tests say so loudly and pass, except in CI.

mod common;
mod otel_support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mcp_runtime::{Client, Endpoint};
use otel_support::Root;
use serde_json::{json, Value};

/// The packages, pinned: the SDK with its tracing, the OpenTelemetry SDK and protobuf messages.
const PACKAGES: &[&str] = &[
    "mcp==2.3.0",
    "opentelemetry-api==1.45.2",
    "opentelemetry-sdk==1.45.2",
    "opentelemetry-proto==1.45.2",
    "protobuf==7.36.2",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

/// The venv's python, or `None` (said loudly; a failure in CI).
fn python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".interop/otel-venv");
            let python = venv.join("bin/python");
            let ready = || {
                Command::new(&python)
                    .args(["-c", "import mcp.server.mcpserver, opentelemetry.sdk, opentelemetry.proto"])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !ready() {
                let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status();
                let installed = made.is_ok_and(|s| s.success())
                    && Command::new(venv.join("bin/pip"))
                        .args(["install", "-q"])
                        .args(PACKAGES)
                        .status()
                        .is_ok_and(|s| s.success());
                if !installed || !ready() {
                    assert!(
                        std::env::var("CI").is_err(),
                        "CI: the Python OpenTelemetry packages could not be installed"
                    );
                    eprintln!("\n=== SKIPPED: the Python SDK and OpenTelemetry packages could not be installed (python3 -m venv + pip); the cross-implementation tracing tests did not run ===\n");
                    return None;
                }
            }
            Some(python)
        })
        .clone()
}

/// A child that is killed when the test ends.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `python script args...` and reads its `PORT <n>` line.
fn serve(python: &Path, script: &str, args: &[&str]) -> (Owned, u16) {
    let mut child = Command::new(python)
        .arg(fixture(script))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Owned(child);
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(port) = line.strip_prefix("PORT ") {
                let _ = tx.send(port.trim().parse::<u16>().unwrap());
                return;
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{script} printed no port"));
    (child, port)
}

/// The JSON lines of `path` for which `pick` holds, waited for up to 20 s.
fn lines_until(path: &Path, mut pick: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if pick(&lines) {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "not there in {}: {lines:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Calls `echo` under a root span and checks the Python server's span is our span's child.
fn check_parent(name: &str, endpoint: &Endpoint, spans: &Path) {
    let root = Root::start("cross-implementation");
    let client = Client::connect(name, endpoint, common::options()).unwrap();
    let out = client
        .call_tool("echo", json!({"message": "across"}))
        .unwrap();
    assert_eq!(out.text(), "across");
    let ours = root.span("tools/call echo");
    let theirs = |lines: &[Value]| {
        lines
            .iter()
            .find(|l| l["attributes"]["mcp.method.name"] == "tools/call")
            .cloned()
    };
    let lines = lines_until(spans, |l| theirs(l).is_some());
    let server = theirs(&lines).unwrap();
    assert_eq!(server["kind"], "SERVER");
    assert_eq!(server["trace_id"], format!("{:032x}", root.trace_id()));
    assert_eq!(
        server["parent_span_id"],
        format!("{:016x}", ours.span_context.span_id()),
        "the server span's parent is our client span"
    );
    assert_eq!(server["attributes"]["gen_ai.tool.name"], "echo");
    client.close();
}

#[test]
fn the_python_sdk_s_server_span_is_a_child_of_ours_over_stdio() {
    let Some(python) = python() else { return };
    let spans = common::temp_dir("otel-python-stdio").with_extension("jsonl");
    let _ = std::fs::remove_file(&spans);
    let endpoint = Endpoint::stdio(
        python.display().to_string(),
        [
            fixture("otel_server.py").display().to_string(),
            "stdio".into(),
            spans.display().to_string(),
        ],
    );
    check_parent("py-stdio", &endpoint, &spans);
}

#[test]
fn the_python_sdk_s_server_span_is_a_child_of_ours_over_http() {
    let Some(python) = python() else { return };
    let spans = common::temp_dir("otel-python-http").with_extension("jsonl");
    let _ = std::fs::remove_file(&spans);
    let (_server, port) = serve(
        &python,
        "otel_server.py",
        &["http", &spans.display().to_string()],
    );
    let endpoint = Endpoint::http(format!("http://127.0.0.1:{port}/mcp"));
    check_parent("py-http", &endpoint, &spans);
}

#[test]
fn mcp_call_exports_its_spans_over_otlp_http() {
    let Some(python) = python() else { return };
    let root = common::temp_dir("otel-cli");
    std::fs::create_dir_all(&root).unwrap();
    let received = root.join("received.jsonl");
    let (_receiver, port) = serve(
        &python,
        "otlp_receiver.py",
        &[&received.display().to_string()],
    );
    let cfg = root.join("servers.json");
    std::fs::write(
        &cfg,
        json!({"mcpServers": {"t": {"command": common::server_path()}}}).to_string(),
    )
    .unwrap();
    let out = common::cli(&root.join("home"))
        .current_dir(&root)
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_TRACES_EXPORTER")
        .args([
            "--config",
            &cfg.display().to_string(),
            "--no-cache",
            "call",
            "mcp_t_echo",
            "message=exported",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "exported");
    // Flushed before the command exited: everything is there now.
    let lines = lines_until(&received, |l| {
        l.iter().any(|x| x["name"] == "tools/call echo")
            && l.iter()
                .any(|x| x["metric"] == "mcp.client.operation.duration")
    });
    let call = lines
        .iter()
        .find(|x| x["name"] == "tools/call echo")
        .unwrap();
    assert_eq!(call["kind"], "CLIENT");
    assert_eq!(call["service_name"], "mcp");
    assert_eq!(call["attributes"]["gen_ai.tool.name"], "echo");
    assert_eq!(call["attributes"]["network.transport"], "pipe");
    let connect = lines
        .iter()
        .find(|x| x["name"] == "connect t")
        .expect("the connect's span");
    assert_eq!(
        connect["trace_id"],
        lines.iter().find(|x| x["name"] == "initialize").unwrap()["trace_id"]
    );
    assert!(lines
        .iter()
        .any(|x| x["metric"] == "mcp.client.session.duration"));
}
