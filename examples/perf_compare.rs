//! Runs our client (`perf_bench`) and the raw floor (`perf_floor`) side by side against the
//! bench server, interleaved round by round so both see the same machine, and prints the
//! medians and their ratios next to the targets.
//!
//! ```text
//! cargo build --release --examples && target/release/examples/perf_compare [--rounds N] [--quick]
//!     [--only TEXT]
//! ```
//!
//! It expects `perf_bench`, `perf_floor` and `bench_server` next to itself (the release
//! examples directory). Only the ratios mean anything: absolute times depend on the machine.
//! `--only TEXT` runs the cases whose name contains TEXT.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

struct Case {
    name: &'static str,
    args: Vec<String>,
    http: bool,
    placement: Placement,
    metric: &'static str,
    /// The target on ours/floor: (`<=` or `>=`, value); `None` for a row shown for information.
    target: Option<(&'static str, f64)>,
    /// 2026-07-28: the bench server and the floor speak it (our client finds it by itself).
    stateless: bool,
}

/// Where the client and the server run.
#[derive(Clone, Copy, PartialEq)]
enum Placement {
    /// Wherever the scheduler puts them.
    Free,
    /// Both on CPU 0.
    OneCpu,
    /// The client on CPU 0, the server on CPU 1.
    TwoCpus,
}

fn main() {
    let mut rounds = 5;
    let mut quick = false;
    let mut only: Option<String> = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            "--quick" => quick = true,
            "--only" => only = it.next(),
            other => {
                eprintln!(
                    "usage: perf_compare [--rounds N] [--quick] [--only TEXT] (unknown {other})"
                );
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
    let cases = [
        // Unpinned, a sequential stdio run settles either with client and server on one CPU
        // (a round trip of a few microseconds) or across two (tens), at the scheduler's whim,
        // for ours and the floor alike; the ratio of such runs compares placements, not
        // clients. The two pinned rows fix the placement; the free one is for information.
        Case {
            name: "stdio seq p50, two CPUs",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: false,
            placement: Placement::TwoCpus,
            metric: "seq_us_median",
            target: Some(("<=", 1.5)),
            stateless: false,
        },
        Case {
            name: "stdio seq p50, one CPU",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: false,
            placement: Placement::OneCpu,
            metric: "seq_us_median",
            target: Some(("<=", 1.5)),
            stateless: false,
        },
        Case {
            name: "stdio seq p50, unpinned",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: false,
            placement: Placement::Free,
            metric: "seq_us_median",
            target: None,
            stateless: false,
        },
        Case {
            name: "stdio 8-thread calls/s",
            args: s(&["--mode", "conc", "--n", &n_conc, "--threads", "8"]),
            http: false,
            placement: Placement::Free,
            metric: "conc_calls_per_s",
            target: Some((">=", 0.8)),
            stateless: false,
        },
        Case {
            name: "stdio cold connect",
            args: s(&["--mode", "cold", "--reps", "20"]),
            http: false,
            placement: Placement::Free,
            metric: "cold_ms_median",
            target: Some(("<=", 1.2)),
            stateless: false,
        },
        Case {
            name: "stdio fleet of 20",
            args: s(&["--mode", "fleet", "--fleet", "20", "--reps", "5"]),
            http: false,
            placement: Placement::Free,
            metric: "fleet_ms_median",
            target: Some(("<=", 1.2)),
            stateless: false,
        },
        // Sequential HTTP settles on one CPU or two at random too (the server's thread and
        // the client's), so it is pinned both ways like stdio. The target is for the usual
        // placement, two CPUs; on one CPU the client's own work per request shows whole (the
        // issue sets no target there for HTTP): shown for information, as is the free run.
        Case {
            name: "http seq p50, two CPUs",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: true,
            placement: Placement::TwoCpus,
            metric: "seq_us_median",
            target: Some(("<=", 1.5)),
            stateless: false,
        },
        Case {
            name: "http seq p50, one CPU",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: true,
            placement: Placement::OneCpu,
            metric: "seq_us_median",
            target: None,
            stateless: false,
        },
        Case {
            name: "http seq p50, unpinned",
            args: s(&["--mode", "seq", "--n", &n_seq]),
            http: true,
            placement: Placement::Free,
            metric: "seq_us_median",
            target: None,
            stateless: false,
        },
        Case {
            name: "http fleet of 20 sessions",
            args: s(&["--mode", "fleet", "--fleet", "20", "--reps", "5"]),
            http: true,
            placement: Placement::Free,
            metric: "fleet_ms_median",
            target: Some(("<=", 1.2)),
            stateless: false,
        },
        Case {
            name: "http 8-thread calls/s",
            args: s(&["--mode", "conc", "--n", &n_conc, "--threads", "8"]),
            http: true,
            placement: Placement::Free,
            metric: "conc_calls_per_s",
            target: Some((">=", 0.5)),
            stateless: false,
        },
    ];
    // The 2026-07-28 era, with the handshake era's targets: per-request `_meta` and headers
    // must cost no more than they cost the floor.
    let stateless = |c: &Case| Case {
        name: match c.name {
            "stdio seq p50, two CPUs" => "2026 stdio seq p50, two CPUs",
            "stdio cold connect" => "2026 stdio cold connect",
            "stdio 8-thread calls/s" => "2026 stdio 8-thread calls/s",
            "http seq p50, two CPUs" => "2026 http seq p50, two CPUs",
            "http fleet of 20 sessions" => "2026 http fleet of 20",
            _ => "",
        },
        args: c
            .args
            .iter()
            .cloned()
            .chain(["--stateless".to_owned()])
            .collect(),
        stateless: true,
        ..*c
    };
    let modern: Vec<Case> = cases
        .iter()
        .map(stateless)
        .filter(|c| !c.name.is_empty())
        .collect();
    let cases: Vec<Case> = cases.into_iter().chain(modern).collect();
    let taskset = Command::new("taskset").arg("--version").output().is_ok();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One HTTP server per placement and era: unpinned, on CPU 0 (with the pinned client), on
    // CPU 1.
    let mut http_servers: Vec<(Placement, bool, Child, String)> = [
        (Placement::Free, None),
        (Placement::OneCpu, Some(0)),
        (Placement::TwoCpus, Some(1)),
    ]
    .into_iter()
    .filter(|(p, cpu)| cpu.is_none() || (taskset && (*p != Placement::TwoCpus || cpus >= 2)))
    .flat_map(|(p, cpu)| [(p, cpu, false), (p, cpu, true)])
    .filter_map(|(p, cpu, era)| start_http_server(&server, cpu, era).map(|(c, u)| (p, era, c, u)))
    .collect();
    println!(
        "{:28} {:>12} {:>12} {:>8}   target   {:>8} {:>8}",
        "case", "ours", "floor", "ratio", "rss+KB", ""
    );
    for case in cases
        .iter()
        .filter(|c| only.as_ref().is_none_or(|o| c.name.contains(o.as_str())))
    {
        if case.placement != Placement::Free && !taskset {
            println!("{:28} (skipped: no taskset)", case.name);
            continue;
        }
        if case.placement == Placement::TwoCpus && cpus < 2 {
            println!("{:28} (skipped: one CPU)", case.name);
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
                let url = http_servers
                    .iter()
                    .find(|(p, era, _, _)| *p == case.placement && *era == case.stateless)
                    .map(|(_, _, _, u)| u.as_str());
                let result = run(&dir.join(client), case, &server, url);
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
        let (target, verdict) = match case.target {
            Some((op, value)) => {
                let ok = if op == "<=" {
                    ratio <= value
                } else {
                    ratio >= value
                };
                (format!("{op} {value:<4}"), if ok { "ok" } else { "MISSED" })
            }
            None => ("info   ".to_owned(), ""),
        };
        println!(
            "{:28} {:>12.1} {:>12.1} {:>7.2}x   {target} {:>8.0} {verdict}",
            case.name,
            o,
            f,
            ratio,
            median(&mut rss),
        );
    }
    for (_, _, child, _) in &mut http_servers {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn run(exe: &Path, case: &Case, server: &str, url: Option<&str>) -> Value {
    let mut cmd = if case.placement == Placement::Free {
        Command::new(exe)
    } else {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(exe);
        c
    };
    cmd.args(&case.args);
    let server = if case.placement == Placement::TwoCpus {
        format!("taskset -c 1 {server}")
    } else {
        server.to_owned()
    };
    let server = if case.stateless {
        format!("{server} --stateless")
    } else {
        server
    };
    match (case.http, url) {
        (true, Some(u)) => cmd.args(["--url", u]),
        _ => cmd.args(["--cmd", &server]),
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

/// Starts `bench_server --http` (on `cpu` only, when given; speaking 2026-07-28 when
/// `stateless`); returns it (to stop at the end) and its URL.
fn start_http_server(server: &str, cpu: Option<usize>, stateless: bool) -> Option<(Child, String)> {
    let mut command = match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string(), server]);
            c
        }
        None => Command::new(server),
    };
    command.arg("--http");
    if stateless {
        command.arg("--stateless");
    }
    let mut child = command.stdout(Stdio::piped()).spawn().ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    Some((child, line.trim().to_owned()))
}
