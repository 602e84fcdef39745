//! Our client under load, in the interface every benchmark harness here uses:
//!
//! ```text
//! perf_bench --mode cold|seq|conc|fleet (--cmd "SERVER ARGS..." | --url URL) [--reps R] [--n N]
//!            [--threads T] [--fleet F] [--warmup W] [--label NAME]
//! ```
//!
//! It prints one line, `RESULT {json}`. See `perf_compare` for the side-by-side run against the
//! raw floor (`perf_floor`), and the README for the numbers.

#[path = "support/perf.rs"]
mod perf;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::transport::{HttpTarget, StdioCommand};
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use perf::{Args, Mode, MESSAGE};
use serde_json::json;

fn main() {
    let args = perf::parse_args("mcp-runtime");
    let fields = match args.mode {
        Mode::Cold => cold(&args),
        Mode::Seq => seq(&args),
        Mode::Conc => conc(&args),
        Mode::Fleet => fleet(&args),
    };
    perf::print_result(&args, fields);
}

fn endpoint(args: &Args) -> Endpoint {
    match (&args.cmd, &args.url) {
        (Some(cmd), _) => {
            Endpoint::Stdio(StdioCommand::new(cmd[0].clone(), cmd[1..].iter().cloned()))
        }
        (None, Some(url)) => Endpoint::Http(HttpTarget::new(url.clone())),
        (None, None) => unreachable!("checked by parse_args"),
    }
}

fn connect(args: &Args) -> Client {
    Client::connect("bench", &endpoint(args), ConnectOptions::default())
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
    for _ in 0..args.warmup {
        echo(&client);
    }
    let mut times = Vec::with_capacity(args.n);
    for _ in 0..args.n {
        let started = Instant::now();
        echo(&client);
        times.push(started.elapsed());
    }
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

fn fleet(args: &Args) -> serde_json::Value {
    // F stdio servers, or F sessions to one HTTP server.
    let config = match (&args.cmd, &args.url) {
        (Some(cmd), _) => ServerConfig::stdio(cmd[0].clone(), cmd[1..].iter().cloned()),
        (None, Some(url)) => ServerConfig {
            transport: Some("http".into()),
            url: Some(url.clone()),
            ..ServerConfig::default()
        },
        _ => unreachable!("checked by the argument parser"),
    };
    let configs: BTreeMap<String, ServerConfig> = (0..args.fleet)
        .map(|i| (format!("s{i}"), config.clone()))
        .collect();
    let mut times = Vec::with_capacity(args.reps);
    let mut tools_total = 0;
    for _ in 0..args.reps {
        let manager = McpManager::new(ManagerOptions {
            startup_timeout: Duration::from_secs(60),
            ..ManagerOptions::default()
        });
        let started = Instant::now();
        let report = manager.connect_servers(&configs);
        times.push(started.elapsed());
        assert_eq!(report.connected.len(), args.fleet, "{report:?}");
        tools_total = manager.get_tools().len();
        manager.disconnect_all();
    }
    perf::fleet_fields(args, times, tools_total)
}
