//! Our client under load, in the interface every benchmark harness here uses:
//!
//! ```text
//! perf_bench --mode cold|seq|conc|fleet|result|cache|index|render
//!            (--cmd "SERVER ARGS..." | --url URL)
//!            [--reps R] [--n N] [--threads T] [--fleet F] [--warmup W] [--label NAME]
//!            [--stateless] [--era-known] [--bytes B] [--cache-dir DIR] [--budget TOKENS|none]
//!            [--extensions none|default|all] [--proxy URL] [--no-proxy LIST]
//! ```
//!
//! - `cold`: R times connect (spawn or open, handshake) and list the tools.
//! - `seq`: one connection, W warm-up calls of `echo`, then N timed ones, one after another.
//! - `conc`: one connection shared by T threads making N calls in all.
//! - `fleet`: R times, F servers through the manager (`connect_servers`, each connect and
//!   list on its own thread): F stdio servers, or F sessions to the one HTTP server of `--url`.
//! - `result`: one connection, N sequential calls of the bench server's `blob` tool, each
//!   result B bytes of text.
//! - `cache` (ours only): a first start of a manager with a `FileToolCache` (in `--cache-dir`,
//!   else a new temp dir, removed after) fills the cache, in a child process of its own (this
//!   program with `--mode fill`) so its memory is not this run's; then R second starts, each
//!   timed until `connect_servers` returns and `get_tools` has the cached tools (the startup
//!   gate at zero, so the tools are the cache's, deferred). The live connection of a second
//!   start goes on in the background and would add its own listing to the memory measured, so
//!   a stdio server is started with `BENCH_SERVER_SILENT=1` then (the bench server never
//!   answers) through an env value resolved at connect time, which the cache key does not see
//!   (over HTTP the live connection is not held back).
//! - `index` (ours only): the tool search index over N catalogue tools: its build, its memory,
//!   a search, and the listing of the same tools by a real server (see `support/features.rs`).
//! - `render` (ours only): `result` through the manager's tools, each result rendered for the
//!   model within the output budget of `--budget` tokens (default 25,000; `none`: unlimited).
//!   The bench server must list `blob` (`--list-blob`).
//!
//! Our features, in every mode that connects a client: `--extensions` the extensions our
//! client declares (`none`; `default`, the tasks extension; `all`: Apps, Skills and tasks),
//! `--proxy` the HTTP options' proxy, `--no-proxy` the `no_proxy` of this process's
//! environment (set before anything connects). A proxy that a loopback server bypasses
//! (`--proxy http://127.0.0.1:9 --no-proxy 127.0.0.1`) must cost nothing: were it used, every
//! call would fail (nothing listens at port 9).
//!
//! It prints one line, `RESULT {json}` (the fields of `support/perf.rs`). See `perf_compare`
//! for the side-by-side run against the raw floor (`perf_floor`), and SPEED.md for the
//! numbers.

#[path = "../tests/common/catalogue.rs"]
mod catalogue;
#[path = "support/features.rs"]
mod features;
#[path = "support/index.rs"]
mod index;
#[path = "support/perf.rs"]
mod perf;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{FileToolCache, ToolCache};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::protocol;
use mcp_runtime::transport::{HttpTarget, Sandbox, StdioCommand};
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use perf::{Args, Mode, BLOB, MESSAGE};
use serde_json::json;

fn main() {
    let args = perf::parse_args("mcp-runtime");
    if let Some(list) = &args.no_proxy {
        // Still one thread: nothing reads the environment meanwhile.
        std::env::set_var("no_proxy", list);
    }
    let fields = match args.mode {
        Mode::Cold => cold(&args),
        Mode::Seq => seq(&args),
        Mode::Conc => conc(&args),
        Mode::Fleet => fleet(&args),
        Mode::Result => result(&args),
        Mode::Cache => cache(&args),
        Mode::Index => features::index(&args),
        Mode::Render => features::render(&args, server_config(&args), connect_options(&args)),
        Mode::Fill => {
            fill(&args);
            return;
        }
    };
    perf::print_result(&args, fields);
}

fn endpoint(args: &Args) -> Endpoint {
    match (&args.cmd, &args.url) {
        (Some(cmd), _) => {
            let mut command = StdioCommand::new(cmd[0].clone(), cmd[1..].iter().cloned());
            command.sandbox = args.sandbox.then(Sandbox::default);
            Endpoint::Stdio(command)
        }
        (None, Some(url)) => Endpoint::Http(HttpTarget::new(url.clone())),
        (None, None) => unreachable!("checked by parse_args"),
    }
}

/// Our client's options: the extensions and the proxy of the command line.
fn connect_options(args: &Args) -> ConnectOptions {
    let mut options = ConnectOptions::default();
    match args.extensions.as_str() {
        "none" => options.extensions.clear(),
        "all" => {
            options
                .extensions
                .insert(protocol::SKILLS_EXTENSION.to_owned(), json!({}));
            options.extensions.insert(
                protocol::UI_EXTENSION.to_owned(),
                json!({"mimeTypes": [protocol::APP_MIME_TYPE]}),
            );
        }
        _ => {}
    }
    options.http.proxy = args.proxy.clone();
    if args.era_known {
        options.era = if args.stateless {
            mcp_runtime::EraChoice::Stateless
        } else {
            mcp_runtime::EraChoice::Handshake
        };
    }
    options
}

fn connect(args: &Args) -> Client {
    Client::connect("bench", &endpoint(args), connect_options(args))
        .expect("connect to the bench server")
}

fn echo(client: &Client) {
    let out = client
        .call_tool("echo", json!({ "message": MESSAGE }))
        .expect("echo");
    assert_eq!(out.content[0].as_text(), Some(MESSAGE));
}

fn cold(args: &Args) -> serde_json::Value {
    let mut times = Vec::with_capacity(args.reps);
    let mut tools = 0;
    for _ in 0..args.reps {
        let started = Instant::now();
        let client = connect(args);
        tools = client.list_tools().expect("tools/list").len();
        times.push(started.elapsed());
        client.close();
    }
    perf::cold_fields(args, times, tools)
}

fn seq(args: &Args) -> serde_json::Value {
    let client = connect(args);
    let times = perf::timed(args.warmup, args.n, || echo(&client));
    client.close();
    perf::seq_fields(args, times)
}

fn conc(args: &Args) -> serde_json::Value {
    let client = connect(args);
    for _ in 0..args.warmup {
        echo(&client);
    }
    let per_thread = args.n / args.threads;
    let barrier = Arc::new(Barrier::new(args.threads + 1));
    let handles: Vec<_> = (0..args.threads)
        .map(|_| {
            let (client, barrier) = (client.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut times = Vec::with_capacity(per_thread);
                barrier.wait();
                for _ in 0..per_thread {
                    let started = Instant::now();
                    echo(&client);
                    times.push(started.elapsed());
                }
                times
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let times: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("bench thread"))
        .collect();
    let wall = started.elapsed();
    client.close();
    perf::conc_fields(args, times, wall)
}

/// The manager's config of the bench server (stdio or HTTP).
fn server_config(args: &Args) -> ServerConfig {
    match (&args.cmd, &args.url) {
        (Some(cmd), _) => ServerConfig {
            sandbox_enabled: args.sandbox.then_some(true),
            ..ServerConfig::stdio(cmd[0].clone(), cmd[1..].iter().cloned())
        },
        (None, Some(url)) => ServerConfig {
            transport: Some("http".into()),
            url: Some(url.clone()),
            ..ServerConfig::default()
        },
        _ => unreachable!("checked by the argument parser"),
    }
}

fn fleet(args: &Args) -> serde_json::Value {
    // F stdio servers, or F sessions to one HTTP server.
    let config = server_config(args);
    let configs: BTreeMap<String, ServerConfig> = (0..args.fleet)
        .map(|i| (format!("s{i}"), config.clone()))
        .collect();
    let mut times = Vec::with_capacity(args.reps);
    let mut tools_total = 0;
    for _ in 0..args.reps {
        let manager = McpManager::new(ManagerOptions {
            startup_timeout: Duration::from_secs(60),
            connect: connect_options(args),
            ..ManagerOptions::default()
        });
        let started = Instant::now();
        let report = manager.connect_servers(&configs);
        times.push(started.elapsed());
        assert_eq!(report.connected.len(), args.fleet, "{report:?}");
        tools_total = mcp_runtime::host::build_tools(&manager).len();
        manager.close();
    }
    perf::fleet_fields(args, times, tools_total)
}

fn result(args: &Args) -> serde_json::Value {
    let client = connect(args);
    let call = || {
        let out = client
            .call_tool(BLOB, json!({ "bytes": args.bytes }))
            .expect("blob");
        assert_eq!(out.content[0].as_text().map(str::len), Some(args.bytes));
    };
    let times = perf::timed(args.warmup.min(2), args.n, call);
    client.close();
    perf::result_fields(args, times)
}

/// The env variable of the cache-mode server, resolved at connect time: it names
/// `PERF_BENCH_SILENT`, which only the measured process sets (to `1`).
const SILENT_ENV: (&str, &str) = ("BENCH_SERVER_SILENT", "PERF_BENCH_SILENT");

/// The one server of cache mode, and a manager with the cache in `dir`.
fn cached_manager(
    args: &Args,
    dir: &str,
    gate: Duration,
) -> (McpManager, BTreeMap<String, ServerConfig>) {
    let mut config = server_config(args);
    if args.cmd.is_some() {
        config.env.insert(SILENT_ENV.0.into(), SILENT_ENV.1.into());
    }
    let cache: Arc<dyn ToolCache> = Arc::new(FileToolCache::new(dir));
    let manager = McpManager::new(ManagerOptions {
        startup_timeout: gate,
        cache: Some(cache),
        connect: connect_options(args),
        ..ManagerOptions::default()
    });
    (manager, BTreeMap::from([("s0".to_owned(), config)]))
}

/// The first start of cache mode: connects, lists, and so writes the cache.
fn fill(args: &Args) {
    let dir = args.cache_dir.as_deref().expect("fill needs --cache-dir");
    let (manager, configs) = cached_manager(args, dir, Duration::from_secs(60));
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected.len(), 1, "{report:?}");
    manager.close();
}

fn cache(args: &Args) -> serde_json::Value {
    let (dir, made) = match &args.cache_dir {
        Some(d) => (d.clone(), false),
        None => {
            let d = std::env::temp_dir().join(format!("perf-bench-cache-{}", std::process::id()));
            (d.display().to_string(), true)
        }
    };
    let mut first = std::process::Command::new(std::env::current_exe().expect("own path"));
    first
        .args(std::env::args().skip(1))
        .args(["--mode", "fill", "--cache-dir", &dir]);
    let status = first
        .env_remove(SILENT_ENV.1)
        .status()
        .expect("run the first start");
    assert!(status.success(), "the first start failed: {status}");
    // Still one thread: nothing reads the environment meanwhile.
    std::env::set_var(SILENT_ENV.1, "1");
    let mut times = Vec::with_capacity(args.reps);
    let mut tools = 0;
    for _ in 0..args.reps {
        let (manager, configs) = cached_manager(args, &dir, Duration::ZERO);
        let started = Instant::now();
        let report = manager.connect_servers(&configs);
        times.push(started.elapsed());
        tools = mcp_runtime::host::build_tools(&manager).len();
        assert_eq!(
            report.deferred.len() + report.connected.len(),
            1,
            "{report:?}"
        );
        assert!(tools > 0, "no tools from the cache: {report:?}");
        manager.close();
    }
    if made {
        let _ = std::fs::remove_dir_all(&dir);
    }
    perf::cache_fields(args, times, tools)
}
