//! A host for the "no server outlives its host" tests.
//!
//! `mcp-test-host SERVER N` connects to N copies of the test server at path SERVER, each
//! started with `--ignore-stdin-eof --ignore-sigterm --grandchild` (a server only SIGKILL
//! stops, with a helper process in its group). The connections are made on a thread that ends
//! before the host reports (a server must not die with the thread that spawned it). Then it
//! prints one line `SERVER_PID GRANDCHILD_PID` per server and `ready`, and waits forever. It
//! handles no signal: SIGTERM and SIGINT kill it as SIGKILL does.
//!
//! `mcp-test-host --call SERVER TOOL ARGS` makes one call of TOOL (ARGS: a JSON object) on the
//! test server at path SERVER and prints `blocks=N` or `error: ...`, then its own peak
//! resident memory as `peak_kib=N` (the large-result tests).

use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::json;

fn main() {
    // A signal ignored by whoever started us (a background shell ignores SIGINT) stays ignored
    // across exec: put back the defaults, so SIGTERM and SIGINT kill this host.
    // SAFETY: setting the default disposition of two signals at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    let mut args = std::env::args().skip(1);
    let mut server = args.next().expect("usage: mcp-test-host SERVER N");
    if server == "--call" {
        server = args
            .next()
            .expect("usage: mcp-test-host --call SERVER TOOL ARGS");
        let tool = args.next().expect("a tool");
        let arguments = serde_json::from_str(&args.next().expect("arguments")).expect("JSON");
        return call_once(&server, &tool, arguments);
    }
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let connector = std::thread::spawn(move || {
        (0..n)
            .map(|i| {
                let endpoint = Endpoint::stdio(
                    server.clone(),
                    ["--ignore-stdin-eof", "--ignore-sigterm", "--grandchild"],
                );
                let client =
                    Client::connect(&format!("s{i}"), &endpoint, ConnectOptions::default())
                        .expect("connect to the test server");
                let grandchild = client
                    .call_tool("grandchild_pid", json!({}))
                    .expect("ask for the grandchild's pid")
                    .text();
                (client, grandchild)
            })
            .collect::<Vec<_>>()
    });
    let clients = connector.join().expect("the connect thread");
    for (client, grandchild) in &clients {
        println!(
            "{} {grandchild}",
            client.pid().expect("a stdio server has a pid")
        );
    }
    println!("ready");
    use std::io::Write;
    std::io::stdout().flush().expect("flush stdout");
    loop {
        std::thread::park();
    }
}

fn call_once(server: &str, tool: &str, arguments: serde_json::Value) {
    let client = Client::connect(
        "s",
        &Endpoint::stdio(server, Vec::<String>::new()),
        ConnectOptions::default(),
    )
    .expect("connect to the test server");
    match client.call_tool(tool, arguments) {
        Ok(result) => println!("blocks={}", result.content.len()),
        Err(e) => println!("error: {e}"),
    }
    client.close();
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .expect("VmHWM");
    println!("peak_kib={}", peak.trim().trim_end_matches("kB").trim());
}
