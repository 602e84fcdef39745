//! The soak: a fleet of servers (stdio test servers, and `server-everything` over Streamable
//! HTTP) under random calls, cancels, timeouts and progress while servers are killed with
//! SIGKILL, HTTP servers restarted (their sessions gone) or cut while idle, `list_changed`
//! storms, reloads of one server or of all, and tool cache files rewritten; the manager's
//! `ReconnectPolicy` brings dead servers back.
//!
//! At each quiet point (nothing in flight) it checks that every server is back with every tool
//! it had, that descriptors, threads and child processes are back to their baseline and that
//! resident memory stays within [`RSS_SLACK_KB`] of it. Every call ends within [`CALL_SLACK`] of
//! its deadline (or of its cancel); an echo answers its own message; a server cut while idle is
//! never reported as needing a login. The first breach stops the run with what it saw.
//!
//! `MCP_SOAK_SECS` (default 10, plus a last quiet point that waits out the HTTP workers' 30 s of idleness) sets its length, `MCP_SOAK_SERVERS` (default 50, a fifth of them
//! HTTP) its fleet, `MCP_SOAK_REPORT` a file for its figures (also printed). `.ci/run` runs it
//! for two minutes; the README has an hour's figures.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::everything::HttpEverything;
use mcp_runtime::manager::{ConnectionState, FileToolCache, ReconnectPolicy};
use mcp_runtime::{CallOptions, CancelToken, Error, ManagerOptions, McpManager, ServerConfig};
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};

use common::soak::{Counts, Rng};

/// How far past its deadline (or its cancel) a call may end.
const CALL_SLACK: Duration = Duration::from_secs(3);
/// How far over the first quiet point's resident memory a later one may be.
const RSS_SLACK_KB: u64 = 64 * 1024;
/// Threads and descriptors over the baseline a quiet point tolerates (a thread that is ending).
const THREAD_SLACK: usize = 2;
const FD_SLACK: usize = 4;
/// Threads making calls.
const WORKERS: usize = 6;
/// An idle HTTP worker's life (the transport's pool).
const POOL_IDLE: Duration = Duration::from_secs(30);
/// Every this many quiet points, one waits for the HTTP workers to be back to the baseline.
const DEEP_EVERY: usize = 10;
/// How long a quiet point waits for the fleet to be back.
const SETTLE: Duration = Duration::from_secs(90);

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One HTTP server of the fleet: its port stays, its process changes.
struct HttpServer {
    port: u16,
    process: Option<HttpEverything>,
}

struct Soak {
    manager: McpManager,
    configs: BTreeMap<String, ServerConfig>,
    http: HashMap<String, Mutex<HttpServer>>,
    /// Operations hold it shared; a quiet point holds it alone.
    gate: RwLock<()>,
    /// Per server: calls hold it shared; an idle cut holds it alone.
    busy: HashMap<String, RwLock<()>>,
    cache: FileToolCache,
    tag: String,
    breach: Mutex<Option<String>>,
    stop: AtomicBool,
    ops: BTreeMap<&'static str, AtomicU64>,
}

const OPS: [&str; 12] = [
    "echo",
    "slow",
    "cancel",
    "timeout",
    "progress",
    "storm",
    "kill",
    "restart",
    "idle cut",
    "reload one",
    "reload all",
    "cache rewrite",
];

impl Soak {
    fn count(&self, op: &'static str) {
        self.ops[op].fetch_add(1, Ordering::Relaxed);
    }

    fn fail(&self, what: String) {
        let mut breach = self.breach.lock();
        if breach.is_none() {
            eprintln!("soak: BREACH: {what}");
            *breach = Some(what);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn names(&self) -> Vec<String> {
        self.configs.keys().cloned().collect()
    }

    /// A call, timed against its deadline or cancel.
    fn call(
        &self,
        server: &str,
        tool: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        let _busy = self.busy[server].read();
        let start = Instant::now();
        let out = self
            .manager
            .call_tool_with(server, tool, args, CallOptions::timeout(timeout));
        if start.elapsed() > timeout + CALL_SLACK {
            self.fail(format!(
                "{server}/{tool} ended {:?} after its start, past its {timeout:?} deadline ({out:?})",
                start.elapsed()
            ));
        }
        out.map(|r| serde_json::to_value(r).unwrap())
    }

    fn worker(&self, seed: u64) {
        let mut rng = Rng::new(seed);
        let names = self.names();
        while !self.stop.load(Ordering::SeqCst) {
            let _gate = self.gate.read();
            let server = rng.pick(&names);
            if self.http.contains_key(server) {
                self.http_op(server, &mut rng);
            } else {
                self.stdio_op(server, &mut rng);
            }
        }
    }

    fn echo(&self, server: &str, tool: &str, rng: &mut Rng) {
        let message = format!("m{}", rng.next());
        if let Ok(v) = self.call(
            server,
            tool,
            json!({"message": message}),
            Duration::from_secs(10),
        ) {
            let text = v
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !text.contains(&message) {
                self.fail(format!("{server}: an echo of {message} answered {v}"));
            }
        }
        self.count("echo");
    }

    fn stdio_op(&self, server: &str, rng: &mut Rng) {
        match rng.below(100) {
            0..=39 => self.echo(server, "echo", rng),
            40..=54 => {
                let ms = rng.below(300);
                let timeout = Duration::from_millis(50 + rng.below(350));
                let _ = self.call(server, "slow", json!({"ms": ms}), timeout);
                self.count("slow");
            }
            55..=64 => self.cancelled(server, "hang", json!({}), rng),
            65..=74 => {
                let _ = self.call(
                    server,
                    "hang",
                    json!({}),
                    Duration::from_millis(50 + rng.below(250)),
                );
                self.count("timeout");
            }
            75..=89 => self.progress(server, "progress", json!({"steps": 3, "interval_ms": 5})),
            _ => {
                let count = 1 + rng.below(20);
                let _ = self.call(
                    server,
                    "list_changed",
                    json!({"count": count}),
                    Duration::from_secs(10),
                );
                self.count("storm");
            }
        }
    }

    fn http_op(&self, server: &str, rng: &mut Rng) {
        let long = json!({"duration": 1, "steps": 4});
        match rng.below(100) {
            0..=59 => self.echo(server, "echo", rng),
            60..=79 => self.progress(server, "trigger-long-running-operation", long),
            _ => self.cancelled(server, "trigger-long-running-operation", long, rng),
        }
    }

    fn warm_up(&self, server: &str) {
        let mut rng = Rng::new(1);
        if self.http.contains_key(server) {
            self.echo(server, "echo", &mut rng);
            self.progress(
                server,
                "trigger-long-running-operation",
                json!({"duration": 1, "steps": 2}),
            );
        } else {
            self.echo(server, "echo", &mut rng);
            self.progress(server, "progress", json!({"steps": 2}));
            let _ = self.call(server, "list_changed", json!({}), Duration::from_secs(10));
        }
    }

    fn progress(&self, server: &str, tool: &str, args: Value) {
        let _busy = self.busy[server].read();
        let timeout = Duration::from_secs(10);
        let start = Instant::now();
        let mut seen = 0u32;
        let options = CallOptions::timeout(timeout).with_progress(|_| seen += 1);
        let out = self.manager.call_tool_with(server, tool, args, options);
        if start.elapsed() > timeout + CALL_SLACK {
            self.fail(format!(
                "{server}/{tool} with progress ended {:?} after its start",
                start.elapsed()
            ));
        }
        let _ = out;
        self.count("progress");
    }

    /// A call cancelled from another thread a random moment after it starts.
    fn cancelled(&self, server: &str, tool: &str, args: Value, rng: &mut Rng) {
        let _busy = self.busy[server].read();
        let token = CancelToken::new();
        let after = Duration::from_millis(10 + rng.below(200));
        let cancelled_at = Arc::new(Mutex::new(None::<Instant>));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(after);
                *cancelled_at.lock() = Some(Instant::now());
                token.cancel();
            });
            let options = CallOptions::timeout(Duration::from_secs(30)).with_cancel(token.clone());
            let out = self.manager.call_tool_with(server, tool, args, options);
            let ended = Instant::now();
            if let Some(at) = *cancelled_at.lock() {
                if ended.saturating_duration_since(at) > CALL_SLACK {
                    self.fail(format!(
                        "{server}/{tool} ended {:?} after its cancel ({out:?})",
                        ended - at
                    ));
                }
            }
        });
        self.count("cancel");
    }

    fn chaos(&self, seed: u64) {
        let mut rng = Rng::new(seed);
        let names = self.names();
        let stdio: Vec<String> = names
            .iter()
            .filter(|n| !self.http.contains_key(*n))
            .cloned()
            .collect();
        let http: Vec<String> = self.http.keys().cloned().collect();
        while !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100 + rng.below(200)));
            let _gate = self.gate.read();
            match rng.below(100) {
                0..=29 => {
                    let name = rng.pick(&stdio);
                    for pid in common::processes_tagged(&format!("{}-{name}", self.tag)) {
                        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    }
                    self.count("kill");
                }
                30..=44 if !http.is_empty() => {
                    self.restart(rng.pick::<String>(&http));
                    self.count("restart");
                }
                45..=52 if !http.is_empty() => self.idle_cut(rng.pick::<String>(&http)),
                53..=74 => {
                    let name = rng.pick(&names);
                    self.manager.disconnect_server(name);
                    let one = BTreeMap::from([(name.clone(), self.configs[name].clone())]);
                    self.manager.connect_servers(&one);
                    self.count("reload one");
                }
                75..=76 => {
                    self.manager.disconnect_all();
                    self.manager.connect_servers(&self.configs);
                    self.count("reload all");
                }
                _ => {
                    let path = self.cache.path_for(rng.pick::<String>(&names));
                    let junk: &[u8] = match rng.below(3) {
                        0 => b"{\"tools\": [",
                        1 => b"{}",
                        _ => b"\x00\xff not json",
                    };
                    let _ = std::fs::write(path, junk);
                    self.count("cache rewrite");
                }
            }
        }
    }

    fn restart(&self, name: &str) {
        let mut server = self.http[name].lock();
        server.process = None;
        server.process = HttpEverything::start_on("streamableHttp", server.port);
    }

    /// Kills an HTTP server nobody is calling: the next call fails, and nothing says the
    /// server needs a login; then it starts again on its port.
    fn idle_cut(&self, name: &str) {
        let _idle = self.busy[name].write();
        self.http[name].lock().process = None;
        let out = self.manager.call_tool_with(
            name,
            "echo",
            json!({"message": "x"}),
            CallOptions::timeout(Duration::from_secs(10)),
        );
        let auth = |e: &Error| {
            matches!(
                e,
                Error::OAuth { .. }
                    | Error::Http {
                        status: 401 | 403,
                        ..
                    }
            )
        };
        match &out {
            Err(e) if auth(e) => self.fail(format!("{name} cut while idle: the call says {e}")),
            Ok(r) => self.fail(format!("{name} cut while idle answered {r:?}")),
            Err(_) => {}
        }
        let status = self.manager.connection_status(name);
        if status.error.as_ref().is_some_and(auth) || status.needs_login() {
            self.fail(format!(
                "{name} cut while idle is reported as needing a login: {:?}",
                status.error
            ));
        }
        self.restart(name);
        self.count("idle cut");
    }

    /// Every server connected with at least the tools it had (`expected`), within [`SETTLE`].
    fn fleet_back(&self, expected: &BTreeMap<String, BTreeSet<String>>) -> Result<(), String> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let tools = self.offered();
            let missing: Vec<String> = self
                .configs
                .keys()
                .filter(|name| {
                    self.manager.connection_status(name).state != ConnectionState::Connected
                        || expected.get(*name).is_some_and(|want| {
                            tools.get(*name).is_none_or(|have| !want.is_subset(have))
                        })
                })
                .cloned()
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let why: Vec<String> = missing
                    .iter()
                    .take(5)
                    .map(|n| format!("{n}: {:?}", self.manager.connection_status(n)))
                    .collect();
                return Err(format!(
                    "not back with all their tools after {SETTLE:?}: {why:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn offered(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for t in self.manager.get_tools() {
            out.entry(t.server.clone())
                .or_default()
                .insert(t.tool.name.clone());
        }
        out
    }
}

fn start_fleet(servers: usize, dir: &std::path::Path, tag: &str) -> Soak {
    let want_http = servers / 5;
    let http_ok = want_http == 0 || common::everything::entry_script().is_some();
    let n_http = if http_ok { want_http } else { 0 };
    if !http_ok {
        eprintln!("soak: node is not installed; all {servers} servers are stdio servers");
    }
    let mut configs = BTreeMap::new();
    for i in 0..servers - n_http {
        let name = format!("s{i:02}");
        let tag = format!("{tag}-{name}");
        let args = ["--tools", "3", "--tag", tag.as_str()];
        configs.insert(name, ServerConfig::stdio(common::server_path(), args));
    }
    let started: Vec<(String, HttpEverything)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n_http)
            .map(|i| {
                s.spawn(move || {
                    (
                        format!("h{i:02}"),
                        HttpEverything::start("streamableHttp").unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut http = HashMap::new();
    for (name, process) in started {
        let config = ServerConfig {
            url: Some(process.mcp_url()),
            ..ServerConfig::default()
        };
        configs.insert(name.clone(), config);
        http.insert(
            name,
            Mutex::new(HttpServer {
                port: process.port(),
                process: Some(process),
            }),
        );
    }
    let cache = FileToolCache::new(dir.join("cache"));
    let options = ManagerOptions {
        cache: Some(Arc::new(FileToolCache::new(dir.join("cache")))),
        reconnect: Some(ReconnectPolicy {
            backoff: vec![Duration::from_millis(50), Duration::from_millis(200)],
            max_tries: 10_000,
            window: Duration::from_secs(1),
        }),
        ..ManagerOptions::default()
    };
    let manager = McpManager::new(options);
    manager.connect_servers(&configs);
    let busy = configs
        .keys()
        .map(|n| (n.clone(), RwLock::new(())))
        .collect();
    Soak {
        manager,
        configs,
        http,
        gate: RwLock::new(()),
        busy,
        cache,
        tag: tag.to_owned(),
        breach: Mutex::new(None),
        stop: AtomicBool::new(false),
        ops: OPS.iter().map(|op| (*op, AtomicU64::new(0))).collect(),
    }
}

#[test]
fn a_fleet_survives_hours_of_faults_and_comes_back_whole() {
    let secs = env_number("MCP_SOAK_SECS", 10);
    let servers = env_number("MCP_SOAK_SERVERS", 50) as usize;
    let quiet_every = Duration::from_secs(env_number(
        "MCP_SOAK_QUIET_SECS",
        if secs > 300 { 60 } else { 5 },
    ));
    let dir = common::temp_dir("soak");
    let tag = format!("soak-{}", std::process::id());
    let before = Counts::now();
    let soak = start_fleet(servers, &dir, &tag);

    // The baseline: the fleet whole, nothing in flight.
    let expected = BTreeMap::new();
    soak.fleet_back(&expected)
        .unwrap_or_else(|e| panic!("the fleet did not start: {e}"));
    let expected = soak.offered();
    // Each server once through what starts a connection's lazy threads (notifications).
    std::thread::scope(|s| {
        for name in soak.names() {
            let soak = &soak;
            s.spawn(move || soak.warm_up(&name));
        }
    });
    soak.fleet_back(&expected)
        .unwrap_or_else(|e| panic!("the fleet did not warm up: {e}"));
    let mut baseline = before;
    let mut base_threads = Default::default();
    let mut base_fds = Default::default();
    let mut points = Vec::new();
    let mut quiet_points = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    std::thread::scope(|s| {
        {
            // The workers wait at the gate while the baseline is taken.
            let _quiet = soak.gate.write();
            for w in 0..WORKERS as u64 {
                let soak = &soak;
                s.spawn(move || soak.worker(0x5eed + w));
            }
            s.spawn(|| soak.chaos(0xc4a05));
            baseline = Counts::settled(Counts::now);
            base_threads = common::soak::thread_names();
            base_fds = common::soak::fd_kinds();
            points.push((0.0f64, baseline.rss_kb));
        }
        while Instant::now() < end && !soak.stop.load(Ordering::SeqCst) {
            let next = (Instant::now() + quiet_every).min(end);
            while Instant::now() < next && !soak.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _quiet = soak.gate.write();
            if soak.stop.load(Ordering::SeqCst) {
                break;
            }
            if let Err(e) = soak.fleet_back(&expected) {
                soak.fail(e);
                break;
            }
            // Every few quiet points (and at the last), the HTTP workers must have gone back
            // to the baseline's too: a deep point waits out their idle time.
            quiet_points += 1;
            let deep = quiet_points % DEEP_EVERY == 0 || Instant::now() + quiet_every >= end;
            let pool = if deep {
                baseline.pool
            } else {
                soak.http.len() * (WORKERS + 2)
            };
            let kept = soak.http.len() * WORKERS;
            let check =
                |c: &Counts| c.within(&baseline, pool, kept, THREAD_SLACK, FD_SLACK, RSS_SLACK_KB);
            let bound = if deep {
                POOL_IDLE + Duration::from_secs(10)
            } else {
                Duration::from_secs(10)
            };
            let now = Counts::until(bound, |c| check(c).is_ok());
            if let Err(e) = check(&now) {
                let threads = common::soak::thread_names();
                let more: Vec<String> = threads
                    .iter()
                    .filter(|(k, n)| base_threads.get(*k).is_none_or(|b| *n > b))
                    .map(|(k, n)| format!("{k} {n} (was {})", base_threads.get(k).unwrap_or(&0)))
                    .collect();
                soak.fail(format!(
                    "at {:?}: {e}; threads over the baseline: {more:?}; descriptors {:?} (baseline {base_fds:?})",
                    start.elapsed(),
                    common::soak::fd_kinds()
                ));
                break;
            }
            points.push((start.elapsed().as_secs_f64(), now.rss_kb));
            eprintln!(
                "soak: {:>5}s{} {now}",
                start.elapsed().as_secs(),
                if deep { " (deep)" } else { "" }
            );
        }
        soak.stop.store(true, Ordering::SeqCst);
    });
    let last = Counts::now();
    soak.manager.close();
    for server in soak.http.values() {
        server.lock().process = None;
    }
    let gone = common::holds_within(Duration::from_secs(20), || {
        common::processes_tagged(&tag).is_empty()
            && soak
                .configs
                .keys()
                .all(|n| common::processes_tagged(&format!("{tag}-{n}")).is_empty())
    });
    let after = Counts::settled(Counts::now);
    let report = common::soak::report(&common::soak::Report {
        secs: start.elapsed().as_secs(),
        servers: soak.configs.len(),
        http: soak.http.len(),
        before,
        baseline,
        last,
        after,
        points: &points,
        ops: soak
            .ops
            .iter()
            .map(|(k, v)| (*k, v.load(Ordering::Relaxed)))
            .collect(),
    });
    eprintln!("{report}");
    if let Ok(path) = std::env::var("MCP_SOAK_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(breach) = soak.breach.lock().take() {
        panic!("the soak stopped: {breach}");
    }
    assert!(gone, "a server process outlived the manager's close");
    assert!(
        after.children == before.children,
        "child processes left: {after} (before: {before})"
    );
    assert!(points.len() >= 2, "no quiet point was reached");
}
