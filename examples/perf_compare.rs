//! Runs our client (`perf_bench`) and the raw floor (`perf_floor`) side by side against the
//! bench server, interleaved round by round so both see the same machine, and prints the
//! medians and their ratios next to the targets.
//!
//! ```text
//! cargo build --release --examples && target/release/examples/perf_compare [--rounds N] [--quick]
//! ```
//!
//! It expects `perf_bench`, `perf_floor` and `bench_server` next to itself (the release
//! examples directory). Only the ratios mean anything: absolute times depend on the machine.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

struct Case {
    name: &'static str,
    args: Vec<String>,
    http: bool,
    pinned: bool,
    metric: &'static str,
    /// The target on ours/floor: (`<=` or `>=`, value).
    target: (&'static str, f64),
}

fn main() {
    let mut rounds = 5;
    let mut quick = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            "--quick" => quick = true,
            other => {
                eprintln!("usage: perf_compare [--rounds N] [--quick] (unknown {other})");
                std::process::exit(2);
            }
        }
    }
    let dir = std::env::current_exe()
        .expect("own path")
        .parent()
        .expect("a directory")
        .to_path_buf();
    let server = dir.join("bench_server").display().to_string();
    let scale = if quick { 4 } else { 1 };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let n_seq = (4000 / scale).to_string();
    let n_conc = (8000 / scale).to_string();
    let cases = vec![
        Case {
            name: "stdio seq p50",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: false,
            pinned: false,
            metric: "seq_us_median",
            target: ("<=", 1.5),
        },
        Case {
            name: "stdio seq p50, one CPU",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: false,
            pinned: true,
            metric: "seq_us_median",
            target: ("<=", 1.5),
        },
        Case {
            name: "stdio 8-thread calls/s",
            args: s(&["--mode", "conc", "--n", &n_conc, "--threads", "8"]),
            http: false,
            pinned: false,
            metric: "conc_calls_per_s",
            target: (">=", 0.8),
        },
        Case {
            name: "stdio cold connect",
            args: s(&["--mode", "cold", "--reps", "20"]),
            http: false,
            pinned: false,
            metric: "cold_ms_median",
            target: ("<=", 1.2),
        },
        Case {
            name: "stdio fleet of 20",
            args: s(&["--mode", "fleet", "--fleet", "20", "--reps", "5"]),
            http: false,
            pinned: false,
            metric: "fleet_ms_median",
            target: ("<=", 1.2),
        },
        Case {
            name: "http seq p50",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: true,
            pinned: false,
            metric: "seq_us_median",
            target: ("<=", 1.5),
        },
        Case {
            name: "http 8-thread calls/s",
            args: s(&["--mode", "conc", "--n", &n_conc, "--threads", "8"]),
            http: true,
            pinned: false,
            metric: "conc_calls_per_s",
            target: (">=", 0.5),
        },
    ];
    let mut http_server = start_http_server(&server);
    let url = http_server.as_ref().map(|(_, u)| u.clone());
    let taskset = Command::new("taskset").arg("--version").output().is_ok();
    println!(
        "{:28} {:>12} {:>12} {:>8}   target   {:>8} {:>8}",
        "case", "ours", "floor", "ratio", "rss+KB", ""
    );
    for case in &cases {
        if case.pinned && !taskset {
            println!("{:28} (skipped: no taskset)", case.name);
            continue;
        }
        let mut ours = Vec::new();
        let mut floor = Vec::new();
        let mut rss = Vec::new();
        for round in 0..rounds {
            // Alternate who goes first, so neither always runs on a warmer machine.
            let order: [&str; 2] = if round % 2 == 0 {
                ["perf_bench", "perf_floor"]
            } else {
                ["perf_floor", "perf_bench"]
            };
            let mut pair = [0.0f64; 2];
            let mut kb = [0.0f64; 2];
            for client in order {
                let result = run(&dir.join(client), case, &server, url.as_deref());
                let v = result[case.metric].as_f64().unwrap_or(f64::NAN);
                let i = usize::from(client == "perf_floor");
                pair[i] = v;
                kb[i] = result["rss_kb"].as_f64().unwrap_or(0.0);
            }
            ours.push(pair[0]);
            floor.push(pair[1]);
            rss.push(kb[0] - kb[1]);
        }
        let (o, f) = (median(&mut ours), median(&mut floor));
        let ratio = o / f;
        let ok = match case.target.0 {
            "<=" => ratio <= case.target.1,
            _ => ratio >= case.target.1,
        };
        println!(
            "{:28} {:>12.1} {:>12.1} {:>7.2}x   {} {:<4} {:>8.0} {}",
            case.name,
            o,
            f,
            ratio,
            case.target.0,
            case.target.1,
            median(&mut rss),
            if ok { "ok" } else { "MISSED" }
        );
    }
    if let Some((child, _)) = http_server.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn run(exe: &Path, case: &Case, server: &str, url: Option<&str>) -> Value {
    let mut cmd = if case.pinned {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    cmd.args(&case.args);
    match (case.http, url) {
        (true, Some(u)) => cmd.args(["--url", u]),
        _ => cmd.args(["--cmd", server]),
    };
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("run a benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| {
            panic!("{} printed no RESULT line: {text}", exe.display());
        });
    serde_json::from_str(line).expect("RESULT is JSON")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Starts `bench_server --http`; returns it (to stop at the end) and its URL.
fn start_http_server(server: &str) -> Option<(Child, String)> {
    let mut child = Command::new(server)
        .arg("--http")
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    Some((child, line.trim().to_owned()))
}
