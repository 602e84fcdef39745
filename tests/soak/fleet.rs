//! The soak's fleet: its servers, the operations the workers make, the faults, and what a
//! quiet point checks of the fleet.

use super::*;
/// One HTTP server of the fleet: its port stays, its process changes.
pub struct HttpServer {
    pub port: u16,
    pub process: Option<HttpEverything>,
}

pub struct Soak {
    pub manager: McpManager,
    pub configs: BTreeMap<String, ServerConfig>,
    pub http: HashMap<String, Mutex<HttpServer>>,
    /// Operations hold it shared; a quiet point holds it alone.
    pub gate: RwLock<()>,
    /// Per server: calls hold it shared; an idle cut holds it alone.
    pub busy: HashMap<String, RwLock<()>>,
    pub cache: FileToolCache,
    pub tag: String,
    pub breach: Mutex<Option<String>>,
    pub stop: AtomicBool,
    pub ops: BTreeMap<&'static str, AtomicU64>,
}

const OPS: [&str; 13] = [
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
    "panic",
];

/// The boundaries the faults put a panic at, one at a time.
#[cfg(feature = "fault-injection")]
const PANICS: [&str; 12] = {
    use mcp_runtime::faults::*;
    [
        CONNECT,
        REFRESH,
        TEARDOWN,
        CLOSE,
        SEND,
        STDIO_READER,
        STDIO_WRITER,
        STDIO_STDERR,
        HTTP_JOB,
        GET_STREAM,
        EVENTS,
        SERVER_REQUEST,
    ]
};

/// The boundary armed for the next panic (its index in [`PANICS`], plus one; 0: none). The
/// first thread to pass it takes it.
#[cfg(feature = "fault-injection")]
static ARMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many of the armed panics were raised.
#[cfg(feature = "fault-injection")]
pub static RAISED: AtomicU64 = AtomicU64::new(0);

/// The panics the soak injects are not printed (a printed backtrace loads the debug info,
/// tens of MiB that would count as the fleet's memory); any other panic is, as before.
#[cfg(feature = "fault-injection")]
pub fn quiet_injected_panics() {
    let before = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let injected = info
            .payload()
            .downcast_ref::<String>()
            .is_some_and(|m| m.starts_with("soak: injected"));
        if !injected {
            before(info);
        }
    }));
}

/// The soak's fault hook on this thread (and the threads the library starts from it).
#[cfg(feature = "fault-injection")]
pub fn injected() -> impl Drop {
    mcp_runtime::faults::inject(|at| {
        let Some(i) = PANICS.iter().position(|b| *b == at) else {
            return;
        };
        if ARMED
            .compare_exchange(i + 1, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            RAISED.fetch_add(1, Ordering::SeqCst);
            panic!("soak: injected at {at}");
        }
    })
}

impl Soak {
    /// Calls `server`'s `tool` as a host does, by the tool object the manager offers; a server
    /// that offers none (it is down, or reconnecting without a cache) fails as not connected.
    pub fn call_tool(
        &self,
        server: &str,
        tool: &str,
        args: Value,
        options: CallOptions<'_>,
    ) -> Result<mcp_runtime::CallToolResult, Error> {
        let Some(object) = common::tool_of(&self.manager, server, tool) else {
            return Err(Error::NotConnected {
                server: server.to_owned(),
                reason: self
                    .manager
                    .connection_status(server)
                    .error()
                    .map(ToString::to_string),
            });
        };
        common::outcome(object.as_ref(), args, options)
    }

    fn count(&self, op: &'static str) {
        self.ops[op].fetch_add(1, Ordering::Relaxed);
    }

    pub fn fail(&self, what: String) {
        let mut breach = self.breach.lock();
        if breach.is_none() {
            eprintln!("soak: BREACH: {what}");
            *breach = Some(what);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    pub fn names(&self) -> Vec<String> {
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
        let out = self.call_tool(server, tool, args, CallOptions::timeout(timeout));
        if start.elapsed() > timeout + CALL_SLACK {
            self.fail(format!(
                "{server}/{tool} ended {:?} after its start, past its {timeout:?} deadline ({out:?})",
                start.elapsed()
            ));
        }
        out.map(|r| serde_json::to_value(r).unwrap())
    }

    /// Runs `body` (a worker's or the faults' loop); a panic in it is a breach, not a silent
    /// end of that thread.
    pub fn guarded(&self, what: &str, body: impl FnOnce()) {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
            self.fail(format!("the {what} thread panicked"));
        }
    }

    pub fn worker(&self, seed: u64) {
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

    pub fn warm_up(&self, server: &str) {
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
        let out = self.call_tool(server, tool, args, options);
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
            let out = self.call_tool(server, tool, args, options);
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

    pub fn chaos(&self, seed: u64) {
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
                #[cfg(feature = "fault-injection")]
                77..=86 => {
                    let which = rng.below(PANICS.len() as u64) as usize;
                    ARMED.store(which + 1, Ordering::SeqCst);
                    self.count("panic");
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
        let out = self.call_tool(
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
        if status.error().is_some_and(auth) || status.needs_login() {
            self.fail(format!(
                "{name} cut while idle is reported as needing a login: {:?}",
                status.error()
            ));
        }
        self.restart(name);
        self.count("idle cut");
    }

    /// Every server connected with at least the tools it had (`expected`) and answering an
    /// echo, within [`SETTLE`].
    pub fn fleet_back(&self, expected: &BTreeMap<String, BTreeSet<String>>) -> Result<(), String> {
        let deadline = Instant::now() + SETTLE;
        let mut last_error = BTreeMap::new();
        loop {
            // A panic put in a server's first connect (a reload's) fails it for good, as any
            // first connect that fails does (the reconnect policy is for servers that were
            // connected): the host reloads it, as one would.
            for name in self.configs.keys() {
                let status = self.manager.connection_status(name);
                if status.as_str() == "disconnected"
                    && matches!(status.error(), Some(Error::Internal { .. }))
                {
                    self.manager.disconnect_server(name);
                    let one = BTreeMap::from([(name.clone(), self.configs[name].clone())]);
                    self.manager.connect_servers(&one);
                }
            }
            let tools = self.offered();
            let missing: Vec<String> = self
                .configs
                .keys()
                .filter(|name| {
                    !self.manager.connection_status(name).is_connected()
                        || expected.get(*name).is_some_and(|want| {
                            tools.get(*name).is_none_or(|have| !want.is_subset(have))
                        })
                })
                .cloned()
                .collect();
            // Connected and listed is not enough: each server answers an echo.
            let missing: Vec<String> = if missing.is_empty() {
                self.configs
                    .keys()
                    .filter(|name| {
                        let args = json!({"message": "quiet"});
                        let timeout = CallOptions::timeout(Duration::from_secs(10));
                        match self.call_tool(name, "echo", args, timeout) {
                            Ok(_) => false,
                            Err(e) => {
                                last_error.insert((*name).clone(), e.to_string());
                                true
                            }
                        }
                    })
                    .cloned()
                    .collect()
            } else {
                missing
            };
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                let why: Vec<String> = missing
                    .iter()
                    .take(5)
                    .map(|n| {
                        let status = self.manager.connection_status(n);
                        let echo = last_error.get(n).map_or("", String::as_str);
                        format!("{n}: {status:?}, its echo: {echo}")
                    })
                    .collect();
                return Err(format!(
                    "not back with all their tools, answering, after {SETTLE:?}: {why:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn offered(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for t in mcp_runtime::host::build_tools(&self.manager) {
            if let Some((server, tool)) = t.mcp_identity() {
                out.entry(server.to_owned())
                    .or_default()
                    .insert(tool.to_owned());
            }
        }
        out
    }
}

pub fn start_fleet(servers: usize, dir: &std::path::Path, tag: &str) -> Soak {
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
    let mut rng = Rng::new(u64::from(std::process::id()));
    let ports: Vec<u16> = (0..n_http)
        .map(|_| common::soak::restartable_port(&mut rng))
        .collect();
    let started: Vec<(String, HttpEverything)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n_http)
            .map(|i| {
                let port = ports[i];
                s.spawn(move || {
                    (
                        format!("h{i:02}"),
                        HttpEverything::start_on("streamableHttp", port).unwrap(),
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
