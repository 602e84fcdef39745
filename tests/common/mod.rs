//! Helpers shared by the integration tests: the test server, process checks, a log capture.
#![allow(dead_code)]

pub mod catalogue;
pub mod everything;
pub mod fixture;
pub mod fleet;
pub mod http_request;
pub mod http_server;
pub mod modern_http;
pub mod npm;
pub mod registry;
pub mod rpc;
pub mod soak;
pub mod tinyproxy;
pub mod tls_front;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcp_runtime::transport::StdioOptions;
use mcp_runtime::{Client, ConnectOptions, Endpoint};

/// The test server binary (an example: `cargo test` builds it next to the test binaries).
pub fn server_path() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| example_path("mcp-test-server").display().to_string())
}

/// A test helper program of this package (`mcp-test-server`, `mcp-modern-server`,
/// `mcp-test-host`): an example, so `cargo install` never installs it, built by `cargo test`
/// into the target directory's `examples/`.
pub fn example_path(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test` (it builds the examples)",
        path.display()
    );
    path
}

/// The endpoint of the test server started with `args` (in the sandbox when the run asks:
/// see [`sandboxed_run`]).
pub fn endpoint(args: &[&str]) -> Endpoint {
    let mut command =
        mcp_runtime::transport::StdioCommand::new(server_path(), args.iter().copied());
    if sandboxed_run() {
        command.sandbox = Some(mcp_runtime::transport::Sandbox {
            allow_write: vec![std::env::temp_dir()],
            // The test server's hold point reaches the test through the proxy.
            allowed_domains: vec!["127.0.0.1".into()],
            ..Default::default()
        });
    }
    Endpoint::Stdio(command)
}

/// Whether this run puts every test server in the sandbox (`MCP_TEST_SANDBOX=1`): `.ci/run`
/// runs the stdio lifecycle tests a second time so, to show that every guarantee (teardown,
/// process groups, reconnects, faults) holds for a sandboxed server too.
pub fn sandboxed_run() -> bool {
    std::env::var("MCP_TEST_SANDBOX").is_ok_and(|v| v == "1")
}

/// `config` as the run asks: in the sandbox (writing only the temporary directory) when
/// [`sandboxed_run`].
pub fn as_run(mut config: mcp_runtime::ServerConfig) -> mcp_runtime::ServerConfig {
    if sandboxed_run() {
        config.sandbox_enabled = Some(true);
        config.sandbox = Some(serde_json::json!({
            "filesystem": {"allowWrite": [std::env::temp_dir().display().to_string()]},
            "network": {"allowedDomains": ["127.0.0.1"]}
        }));
    }
    config
}

/// Options with a short close grace, so escalation tests stay quick.
pub fn options() -> ConnectOptions {
    ConnectOptions {
        timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(20),
        stdio: StdioOptions {
            close_grace: Duration::from_millis(500),
            ..StdioOptions::default()
        },
        ..ConnectOptions::default()
    }
}

/// Connects to the test server started with `args`.
pub fn connect(name: &str, args: &[&str]) -> Client {
    Client::connect(name, &endpoint(args), options()).expect("connect to the test server")
}

/// Whether a process exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// The tests' one wait for a fact: polls `fact` until it holds or `within` has passed, and
/// says whether it held.
pub fn holds_within(within: Duration, mut fact: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if fact() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// [`holds_within`], failing the test with `what` when the fact did not hold in time.
pub fn eventually(what: &str, within: Duration, fact: impl FnMut() -> bool) {
    assert!(holds_within(within, fact), "not within {within:?}: {what}");
}

/// Waits (bounded) until the process is gone: on its pidfd where the kernel has them.
pub fn wait_gone(pid: u32, bound: Duration) -> bool {
    Watched::new(pid).wait_gone(bound)
}

/// A process watched by its pidfd from now on: when its pid is reused later (a busy machine
/// wraps `pid_max`), the watch still tells about this process, not the new one.
pub struct Watched {
    pid: u32,
    fd: Option<std::os::fd::OwnedFd>,
}

impl Watched {
    pub fn new(pid: u32) -> Watched {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd =
            unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) } as libc::c_int;
        // SAFETY: a new descriptor, owned once.
        let fd = (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
        Watched { pid, fd }
    }

    /// Waits (bounded) until the process has exited.
    pub fn wait_gone(&self, bound: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let deadline = Instant::now() + bound;
        let Some(fd) = &self.fd else {
            // No pidfd (an old kernel, or the process was gone already).
            while is_alive(self.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            return !is_alive(self.pid);
        };
        loop {
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            // SAFETY: one valid pollfd; it becomes readable when the process exits.
            let ready =
                unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(100) as libc::c_int) };
            if ready > 0 && pfd.revents & libc::POLLIN != 0 {
                return true;
            }
            if left.is_zero() {
                return false;
            }
        }
    }
}

/// A log record captured by [`logs`].
#[derive(Debug, Clone)]
pub struct Record {
    pub target: String,
    pub level: log::Level,
    pub message: String,
}

struct Capture;

static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        RECORDS.lock().unwrap().push(Record {
            target: record.target().to_owned(),
            level: record.level(),
            message: record.args().to_string(),
        });
    }
    fn flush(&self) {}
}

/// Installs the capturing logger (once per test binary).
pub fn capture_logs() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        log::set_boxed_logger(Box::new(Capture)).expect("install the capture logger");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// Every record captured so far that mentions `needle` in its target or message.
pub fn logs(needle: &str) -> Vec<Record> {
    RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.target.contains(needle) || r.message.contains(needle))
        .cloned()
        .collect()
}

/// Holds a test server (started with `--hold-port`) at one method until released.
pub struct Hold {
    port: u16,
    held: crossbeam_channel::Receiver<std::net::TcpStream>,
}

/// A server waiting at its held method.
pub struct Held(std::net::TcpStream);

impl Hold {
    /// A hold point on a loopback port; every server that reaches it is queued.
    pub fn new() -> Hold {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, held) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if tx.send(stream).is_err() {
                    return;
                }
            }
        });
        Hold { port, held }
    }

    /// The `--hold-port` argument.
    pub fn port(&self) -> String {
        self.port.to_string()
    }

    /// Waits (bounded) until a server is held, and returns it.
    pub fn wait(&self) -> Held {
        Held(
            self.held
                .recv_timeout(Duration::from_secs(20))
                .expect("the server never reached its hold point"),
        )
    }
}

impl Held {
    /// Lets the server answer.
    pub fn release(mut self) {
        use std::io::Write;
        let _ = self.0.write_all(b"!");
    }
}

/// A fresh, empty directory under the temp dir.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Processes whose command line contains `tag` as an argument (live ones only).
pub fn processes_tagged(tag: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|a| a == tag.as_bytes()) && is_alive(pid) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// The `mcp` command (the package's binary; the `cli` feature, on by default, builds it).
pub fn cli_path() -> std::path::PathBuf {
    match option_env!("CARGO_BIN_EXE_mcp") {
        Some(path) => path.into(),
        None => panic!("the `mcp` binary is not built: the CLI tests need the `cli` feature"),
    }
}

/// The `mcp` command with `home` as its home (its config, cache and auth files live there) and
/// no `RUST_LOG` from the environment.
pub fn cli(home: &std::path::Path) -> std::process::Command {
    std::fs::create_dir_all(home).unwrap();
    let mut cmd = std::process::Command::new(cli_path());
    cmd.env("HOME", home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("RUST_LOG");
    cmd
}

/// A fresh path for a test server's `--log` file (`name` tells the tests apart; nothing is
/// there yet).
pub fn server_log(name: &str) -> String {
    let path = std::env::temp_dir().join(format!("mcp-log-{}-{name}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path.to_string_lossy().into_owned()
}

/// The lines a test server wrote to its `--log` file so far.
pub fn log_lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The tool object `server`'s `tool` is offered as, found the way a host finds it: among the
/// manager's tools (those only an App may call included).
pub fn tool_of(
    manager: &mcp_runtime::McpManager,
    server: &str,
    tool: &str,
) -> Option<std::sync::Arc<dyn mcp_runtime::AgentTool>> {
    mcp_runtime::host::all_loaded_tools(manager)
        .into_iter()
        .find(|t| t.mcp_identity() == Some((server, tool)))
}

/// Calls `server`'s `tool` as a host does (its tool object's `execute`), as a result or the
/// failure of the call (`ToolOutput::failure`). A tool the manager does not offer within 20 s
/// panics.
pub fn call_tool_with(
    manager: &mcp_runtime::McpManager,
    server: &str,
    tool: &str,
    arguments: serde_json::Value,
    options: mcp_runtime::CallOptions<'_>,
) -> Result<mcp_runtime::CallToolResult, mcp_runtime::Error> {
    // A connected server's tools may still be being listed: wait for the tool, as a host
    // waits for a late server.
    let mut object = None;
    let offered = holds_within(Duration::from_secs(20), || {
        object = tool_of(manager, server, tool);
        object.is_some()
    });
    let (true, Some(object)) = (offered, object) else {
        panic!("the manager offers no tool {tool:?} of {server:?} within 20 s");
    };
    outcome(object.as_ref(), arguments, options)
}

/// [`call_tool_with`] with the default options.
pub fn call_tool(
    manager: &mcp_runtime::McpManager,
    server: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<mcp_runtime::CallToolResult, mcp_runtime::Error> {
    call_tool_with(
        manager,
        server,
        tool,
        arguments,
        mcp_runtime::CallOptions::default(),
    )
}

/// A session's options for a test project: discovery from `cwd` with `home` as the home
/// directory, the project's servers started without asking (the test wrote its project files
/// itself; the trust gate is `tests/trust.rs`'s), `manager` as given, and no tool cache (the
/// user's real cache directory stays untouched).
pub fn project_session(
    home: &std::path::Path,
    cwd: &std::path::Path,
    manager: mcp_runtime::ManagerOptions,
) -> mcp_runtime::SessionOptions {
    mcp_runtime::SessionOptions {
        cwd: cwd.to_path_buf(),
        config: mcp_runtime::DiscoveryOptions {
            home: Some(home.to_path_buf()),
            project_trust: mcp_runtime::ProjectTrust::TrustAll,
            ..mcp_runtime::DiscoveryOptions::default()
        },
        manager,
        default_cache: false,
        ..mcp_runtime::SessionOptions::default()
    }
}

/// Calls `tool` and turns its output into the call's outcome: the result, or the failure of
/// the call (`ToolOutput::failure`); a cancellation stays an error.
pub fn outcome(
    tool: &dyn mcp_runtime::AgentTool,
    arguments: serde_json::Value,
    options: mcp_runtime::CallOptions<'_>,
) -> Result<mcp_runtime::CallToolResult, mcp_runtime::Error> {
    let out = tool.execute(arguments, options)?;
    match out.failure {
        Some(e) => Err(e),
        None => Ok(out.result),
    }
}
