//! The raw floor: the least a client can do to get the same answers, in the same interface as
//! `perf_bench`. Preformatted JSON lines over pipes (stdio), or hand-written HTTP/1.1 with
//! keep-alive (http); every response parsed into a `serde_json::Value` and checked. No error
//! handling, timeouts, cancellation, or anything else a real client needs: the floor. In the
//! fleet, each server's parsed listing is kept until the server closes, as the manager keeps
//! the tools it listed.
//!
//! The modes are `perf_bench`'s (see there) but `cache`, `fill`, `index` and `render`: the
//! floor keeps no cache, no tool index and no output budget. The flags of our features alone
//! (`--budget`, `--extensions`, `--proxy`, `--no-proxy`) are read and ignored.
//! In `conc` mode the stdio threads share one pipe (a writer lock and a reader thread routing
//! answers by id); over HTTP each thread has a keep-alive connection of its own.
//!
//! With `--stateless` it is the floor of 2026-07-28: `server/discover` instead of the
//! handshake, the same `_meta` our client sends on every request, and on HTTP the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, no session.

#[path = "support/perf.rs"]
mod perf;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use perf::{Args, Mode, BLOB, MESSAGE};
use serde_json::Value;

/// Whether to speak 2026-07-28 (set once, from `--stateless`).
static STATELESS: AtomicBool = AtomicBool::new(false);

fn stateless() -> bool {
    STATELESS.load(Ordering::Relaxed)
}

fn main() {
    let args = perf::parse_args("floor");
    STATELESS.store(args.stateless, Ordering::Relaxed);
    let fields = match args.mode {
        Mode::Cold => cold(&args),
        Mode::Seq => seq(&args),
        Mode::Conc => conc(&args),
        Mode::Fleet => fleet(&args),
        Mode::Result => result(&args),
        Mode::Cache | Mode::Fill | Mode::Index | Mode::Render => {
            eprintln!(
                "perf_floor: the floor keeps no cache, no tool index and no output budget \
(cache, index and render modes are perf_bench's only)"
            );
            std::process::exit(2);
        }
    };
    perf::print_result(&args, fields);
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
/// The `_meta` of every 2026-07-28 request (what our client sends with no handler).
const META: &str = r#"{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;

fn discover_line() -> String {
    format!(r#"{{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{{"_meta":{META}}}}}"#)
}

fn call_line(id: u64) -> String {
    if stateless() {
        return format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{META},"arguments":{{"message":"{MESSAGE}"}},"name":"echo"}}}}"#
        );
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{MESSAGE}"}}}}}}"#
    )
}

fn blob_line(id: u64, bytes: usize) -> String {
    if stateless() {
        return format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{META},"arguments":{{"bytes":{bytes}}},"name":"{BLOB}"}}}}"#
        );
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{BLOB}","arguments":{{"bytes":{bytes}}}}}}}"#
    )
}

fn list_line(id: u64) -> String {
    if stateless() {
        return format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{META}}}}}"#
        );
    }
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#)
}

/// The 2026-07-28 headers that mirror a body (empty for the handshake era).
fn era_headers(json: &str) -> &'static str {
    if !stateless() {
        return "";
    }
    if json.contains(r#""name":"blob""#) {
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: blob\r\n"
    } else if json.contains(r#""method":"tools/call""#) {
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
    } else if json.contains(r#""method":"tools/list""#) {
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
    } else {
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n"
    }
}

/// How many tools a listing has.
fn count(tools: &Value) -> usize {
    tools.as_array().map(Vec::len).unwrap_or(0)
}

fn check_echo(v: &Value) {
    assert_eq!(v["result"]["content"][0]["text"].as_str(), Some(MESSAGE));
}

fn check_blob(v: &Value, bytes: usize) {
    assert_eq!(
        v["result"]["content"][0]["text"].as_str().map(str::len),
        Some(bytes)
    );
}

/// A stdio server driven in lockstep.
struct Pipe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    line: Vec<u8>,
}

impl Pipe {
    fn spawn(cmd: &[String]) -> Pipe {
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the bench server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Pipe {
            child,
            stdin,
            stdout,
            line: Vec::with_capacity(1 << 16),
        }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.write_all(b"\n").expect("write");
    }

    fn recv(&mut self) -> Value {
        self.line.clear();
        self.stdout.read_until(b'\n', &mut self.line).expect("read");
        serde_json::from_slice(&self.line).expect("JSON")
    }

    fn handshake(&mut self) {
        if stateless() {
            self.send(&discover_line());
            self.recv();
            return;
        }
        self.send(INIT);
        self.recv();
        self.send(INITIALIZED);
    }

    /// The listed tools, as parsed.
    fn list(&mut self) -> Value {
        self.send(&list_line(1));
        self.recv()["result"]["tools"].take()
    }

    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Hand-written HTTP/1.1 with keep-alive.
struct Http {
    stream: BufReader<TcpStream>,
    host: String,
    path: String,
    body: Vec<u8>,
}

impl Http {
    fn connect(url: &str) -> Http {
        let rest = url.strip_prefix("http://").expect("an http:// URL");
        let (host, path) = rest
            .split_once('/')
            .map(|(h, p)| (h, format!("/{p}")))
            .unwrap_or((rest, "/".into()));
        let stream = TcpStream::connect(host).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Http {
            stream: BufReader::new(stream),
            host: host.to_owned(),
            path,
            body: Vec::new(),
        }
    }

    fn post(&mut self, json: &str) -> Option<Value> {
        let request = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{}Content-Length: {}\r\n\r\n{json}",
            self.path,
            self.host,
            era_headers(json),
            json.len()
        );
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .expect("write");
        let mut line = String::new();
        let mut length = 0;
        self.stream.read_line(&mut line).expect("status line");
        loop {
            line.clear();
            self.stream.read_line(&mut line).expect("header");
            let h = line.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().expect("length");
                }
            }
        }
        self.body.resize(length, 0);
        self.stream.read_exact(&mut self.body).expect("body");
        (length > 0).then(|| serde_json::from_slice(&self.body).expect("JSON"))
    }

    fn handshake(&mut self) {
        if stateless() {
            self.post(&discover_line());
            return;
        }
        self.post(INIT);
        self.post(INITIALIZED);
    }
}

fn cold(args: &Args) -> Value {
    let mut times = Vec::new();
    let mut tools = 0;
    for _ in 0..args.reps {
        let started = Instant::now();
        match (&args.cmd, &args.url) {
            (Some(cmd), _) => {
                let mut p = Pipe::spawn(cmd);
                p.handshake();
                tools = count(&p.list());
                times.push(started.elapsed());
                p.close();
            }
            (None, Some(url)) => {
                let mut h = Http::connect(url);
                h.handshake();
                tools = count(&h.post(&list_line(1)).expect("list")["result"]["tools"]);
                times.push(started.elapsed());
            }
            _ => unreachable!(),
        }
    }
    perf::cold_fields(args, times, tools)
}

fn seq(args: &Args) -> Value {
    let mut times = Vec::with_capacity(args.n);
    match (&args.cmd, &args.url) {
        (Some(cmd), _) => {
            let mut p = Pipe::spawn(cmd);
            p.handshake();
            for i in 0..(args.warmup + args.n) {
                let started = Instant::now();
                p.send(&call_line(i as u64 + 10));
                check_echo(&p.recv());
                if i >= args.warmup {
                    times.push(started.elapsed());
                }
            }
            p.close();
        }
        (None, Some(url)) => {
            let mut h = Http::connect(url);
            h.handshake();
            for i in 0..(args.warmup + args.n) {
                let started = Instant::now();
                check_echo(&h.post(&call_line(i as u64 + 10)).expect("reply"));
                if i >= args.warmup {
                    times.push(started.elapsed());
                }
            }
        }
        _ => unreachable!(),
    }
    perf::seq_fields(args, times)
}

fn result(args: &Args) -> Value {
    let mut times = Vec::with_capacity(args.n);
    let warmup = args.warmup.min(2);
    let mut timed = |i: usize, call: &mut dyn FnMut(u64)| {
        let started = Instant::now();
        call(i as u64 + 10);
        if i >= warmup {
            times.push(started.elapsed());
        }
    };
    match (&args.cmd, &args.url) {
        (Some(cmd), _) => {
            let mut p = Pipe::spawn(cmd);
            p.handshake();
            for i in 0..(warmup + args.n) {
                timed(i, &mut |id| {
                    p.send(&blob_line(id, args.bytes));
                    check_blob(&p.recv(), args.bytes);
                });
            }
            p.close();
        }
        (None, Some(url)) => {
            let mut h = Http::connect(url);
            h.handshake();
            for i in 0..(warmup + args.n) {
                timed(i, &mut |id| {
                    check_blob(
                        &h.post(&blob_line(id, args.bytes)).expect("reply"),
                        args.bytes,
                    );
                });
            }
        }
        _ => unreachable!(),
    }
    perf::result_fields(args, times)
}

fn conc(args: &Args) -> Value {
    let per_thread = args.n / args.threads;
    let barrier = Arc::new(Barrier::new(args.threads + 1));
    let (handles, cleanup): (
        Vec<std::thread::JoinHandle<Vec<Duration>>>,
        Option<PipeChild>,
    ) = match (&args.cmd, &args.url) {
        (Some(cmd), _) => {
            // One pipe shared by every thread: a writer lock and a reader thread that routes
            // each response to its caller by id (the least a shared connection needs).
            let mut p = Pipe::spawn(cmd);
            p.handshake();
            let Pipe {
                child,
                stdin,
                mut stdout,
                ..
            } = p;
            let writer = Arc::new(Mutex::new(stdin));
            let waiting: Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>> =
                Arc::new(Mutex::new(HashMap::new()));
            let w = Arc::clone(&waiting);
            std::thread::spawn(move || {
                let mut line = Vec::new();
                loop {
                    line.clear();
                    if stdout.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let v: Value = serde_json::from_slice(&line).expect("JSON");
                    let id = v["id"].as_u64().unwrap_or(0);
                    if let Some(tx) = w.lock().unwrap().remove(&id) {
                        let _ = tx.send(v);
                    }
                }
            });
            let next = Arc::new(AtomicU64::new(10));
            let handles = (0..args.threads)
                .map(|_| {
                    let (writer, waiting, next, barrier) = (
                        Arc::clone(&writer),
                        Arc::clone(&waiting),
                        Arc::clone(&next),
                        Arc::clone(&barrier),
                    );
                    std::thread::spawn(move || {
                        let mut times = Vec::with_capacity(per_thread);
                        barrier.wait();
                        for _ in 0..per_thread {
                            let started = Instant::now();
                            let id = next.fetch_add(1, Ordering::Relaxed);
                            let (tx, rx) = mpsc::channel();
                            waiting.lock().unwrap().insert(id, tx);
                            {
                                let mut w = writer.lock().unwrap();
                                w.write_all(call_line(id).as_bytes()).expect("write");
                                w.write_all(b"\n").expect("write");
                            }
                            check_echo(&rx.recv().expect("reply"));
                            times.push(started.elapsed());
                        }
                        times
                    })
                })
                .collect();
            drop(writer);
            (handles, Some(PipeChild(child)))
        }
        (None, Some(url)) => {
            // One keep-alive connection per thread.
            let handles = (0..args.threads)
                .map(|_| {
                    let (url, barrier) = (url.clone(), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        let mut h = Http::connect(&url);
                        h.handshake();
                        let mut times = Vec::with_capacity(per_thread);
                        barrier.wait();
                        for i in 0..per_thread {
                            let started = Instant::now();
                            check_echo(&h.post(&call_line(i as u64 + 10)).expect("reply"));
                            times.push(started.elapsed());
                        }
                        times
                    })
                })
                .collect();
            (handles, None)
        }
        _ => unreachable!(),
    };
    barrier.wait();
    let started = Instant::now();
    let times: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    let wall = started.elapsed();
    if let Some(p) = cleanup {
        p.kill();
    }
    perf::conc_fields(args, times, wall)
}

/// The server of the shared-pipe run, stopped at the end.
struct PipeChild(Child);

impl PipeChild {
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fleet(args: &Args) -> Value {
    let mut times = Vec::new();
    let mut tools_total = 0;
    for _ in 0..args.reps {
        let started = Instant::now();
        // Each server's (or session's) listing is kept until it closes, as the manager keeps
        // its tools.
        match (&args.cmd, &args.url) {
            (Some(cmd), _) => {
                let pipes: Vec<(Pipe, Value)> = in_parallel(args.fleet, || {
                    let mut p = Pipe::spawn(cmd);
                    p.handshake();
                    let tools = p.list();
                    (p, tools)
                });
                times.push(started.elapsed());
                tools_total = pipes.iter().map(|(_, tools)| count(tools)).sum();
                for (p, _) in pipes {
                    p.close();
                }
            }
            (None, Some(url)) => {
                let sessions: Vec<(Http, Value)> = in_parallel(args.fleet, || {
                    let mut h = Http::connect(url);
                    h.handshake();
                    let tools = h.post(&list_line(1)).expect("list")["result"]["tools"].take();
                    (h, tools)
                });
                times.push(started.elapsed());
                tools_total = sessions.iter().map(|(_, tools)| count(tools)).sum();
            }
            _ => unreachable!("checked by the argument parser"),
        }
    }
    perf::fleet_fields(args, times, tools_total)
}

/// `n` runs of `f`, each on its own thread, their results in order.
fn in_parallel<T: Send>(n: usize, f: impl Fn() -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n).map(|_| s.spawn(&f)).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    })
}
