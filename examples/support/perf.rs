//! What `perf_bench` (our client) and `perf_floor` (the raw floor) share: the command line,
//! the statistics and the `RESULT` line, so both are measured and reported the same way.
//!
//! Every `RESULT` line has `rss_kb` (the peak resident memory, VmHWM, at the end) and
//! `rss_base_kb` (the resident memory when the program started, before any work): the memory
//! a run's work took is the difference.

#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Map, Value};

/// The benchmark modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Cold,
    Seq,
    Conc,
    Fleet,
    /// Sequential calls of the `blob` tool, each result `--bytes` long.
    Result,
    /// Ours only: second starts of a manager whose tool cache a first start filled.
    Cache,
    /// Ours only: the first start of `cache` mode, run in a process of its own.
    Fill,
    /// Ours only: the tool search index over `--n` catalogue tools (build, memory, search,
    /// and the listing of the same tools).
    Index,
    /// Ours only: `result` through the manager's tools, each result rendered for the model
    /// within `--budget`.
    Render,
}

impl Mode {
    /// The name on the command line and in `RESULT`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Cold => "cold",
            Mode::Seq => "seq",
            Mode::Conc => "conc",
            Mode::Fleet => "fleet",
            Mode::Result => "result",
            Mode::Cache => "cache",
            Mode::Fill => "fill",
            Mode::Index => "index",
            Mode::Render => "render",
        }
    }
}

/// The command line of both benchmark programs.
#[derive(Debug, Clone)]
pub struct Args {
    pub mode: Mode,
    pub cmd: Option<Vec<String>>,
    pub url: Option<String>,
    pub reps: usize,
    pub n: usize,
    pub threads: usize,
    pub fleet: usize,
    pub warmup: usize,
    pub label: String,
    /// Speak 2026-07-28 (the floor: `server/discover`, `_meta` on every request, the HTTP
    /// headers; our client finds the era by itself).
    pub stateless: bool,
    /// Ours only: the era is known (`EraChoice::Handshake`, or `Stateless` with
    /// `--stateless`), as after the tool cache remembered it; without it our client probes.
    /// The floor always knows it.
    pub era_known: bool,
    /// The stdio servers run in the sandbox (`--sandbox`: the strictest rules; ours only).
    pub sandbox: bool,
    /// The length of each `blob` result (`result` mode).
    pub bytes: usize,
    /// The cache directory of `cache` and `fill` modes (default: a new one in the temp dir).
    pub cache_dir: Option<String>,
    /// Ours only: the output budget of `render` mode, in tokens (`--budget none`: `None`,
    /// unlimited; default 25,000, the manager's default).
    pub budget: Option<usize>,
    /// Ours only: the extensions our client declares: `none`, `default` (the tasks
    /// extension, `ConnectOptions`' default) or `all` (Apps, Skills and tasks).
    pub extensions: String,
    /// Ours only: the proxy of the HTTP options (`--proxy URL`).
    pub proxy: Option<String>,
    /// Ours only: `no_proxy`, set in this process's environment before any connection.
    pub no_proxy: Option<String>,
}

pub const USAGE: &str =
    "usage: --mode cold|seq|conc|fleet|result|cache|fill|index|render (--cmd \"SERVER ARGS...\" | \
--url URL) [--reps R] [--n N] [--threads T] [--fleet F] [--warmup W] [--label NAME] [--stateless] [--era-known] \
[--bytes B] [--cache-dir DIR] [--budget TOKENS|none] [--extensions none|default|all] [--proxy URL] \
[--no-proxy LIST]";

/// The resident memory (KiB) when the arguments were parsed, before any work.
static RSS_BASE_KB: OnceLock<u64> = OnceLock::new();

/// Parses the command line (exits with status 2 on bad usage).
pub fn parse_args(default_label: &str) -> Args {
    RSS_BASE_KB.get_or_init(|| status_kb("VmRSS:"));
    let mut args = Args {
        mode: Mode::Seq,
        cmd: None,
        url: None,
        reps: 10,
        n: 2000,
        threads: 8,
        fleet: 20,
        warmup: 200,
        label: default_label.to_owned(),
        stateless: false,
        era_known: false,
        sandbox: false,
        bytes: 1024,
        cache_dir: None,
        budget: Some(25_000),
        extensions: "default".to_owned(),
        proxy: None,
        no_proxy: None,
    };
    let mut it = std::env::args().skip(1);
    let bad = |m: &str| -> ! {
        eprintln!("{m}\n{USAGE}");
        std::process::exit(2)
    };
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| bad(&format!("{a} needs a value")))
        };
        let number = |v: String| {
            v.parse::<usize>()
                .unwrap_or_else(|_| bad(&format!("not a number: {v}")))
        };
        match a.as_str() {
            "--mode" => {
                args.mode = match value().as_str() {
                    "cold" => Mode::Cold,
                    "seq" => Mode::Seq,
                    "conc" => Mode::Conc,
                    "fleet" => Mode::Fleet,
                    "result" => Mode::Result,
                    "cache" => Mode::Cache,
                    "fill" => Mode::Fill,
                    "index" => Mode::Index,
                    "render" => Mode::Render,
                    other => bad(&format!("unknown mode {other}")),
                }
            }
            "--cmd" => args.cmd = Some(value().split_whitespace().map(str::to_owned).collect()),
            "--url" => args.url = Some(value()),
            "--reps" => args.reps = number(value()),
            "--n" => args.n = number(value()),
            "--threads" => args.threads = number(value()).max(1),
            "--fleet" => args.fleet = number(value()).max(1),
            "--warmup" => args.warmup = number(value()),
            "--label" => args.label = value(),
            "--stateless" => args.stateless = true,
            "--era-known" => args.era_known = true,
            "--sandbox" => args.sandbox = true,
            "--bytes" => args.bytes = number(value()),
            "--cache-dir" => args.cache_dir = Some(value()),
            "--budget" => {
                args.budget = match value() {
                    v if v == "none" => None,
                    v => Some(number(v)),
                }
            }
            "--extensions" => {
                args.extensions = value();
                if !["none", "default", "all"].contains(&args.extensions.as_str()) {
                    bad(&format!("unknown extensions {}", args.extensions));
                }
            }
            "--proxy" => args.proxy = Some(value()),
            "--no-proxy" => args.no_proxy = Some(value()),
            other => bad(&format!("unknown argument {other}")),
        }
    }
    if args.cmd.is_none() == args.url.is_none() {
        bad("give exactly one of --cmd and --url");
    }
    args
}

impl Args {
    pub fn transport(&self) -> &'static str {
        if self.url.is_some() {
            "http"
        } else {
            "stdio"
        }
    }
}

/// Runs `call` `warmup` times untimed, then `n` times, each timed.
pub fn timed(warmup: usize, n: usize, mut call: impl FnMut()) -> Vec<Duration> {
    for _ in 0..warmup {
        call();
    }
    (0..n)
        .map(|_| {
            let started = std::time::Instant::now();
            call();
            started.elapsed()
        })
        .collect()
}

/// The percentile `q` of a sorted list: index `floor(q*(len-1)+0.5)`.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = (q * (sorted.len() - 1) as f64 + 0.5).floor() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Peak resident memory (VmHWM) in KiB.
pub fn rss_kb() -> u64 {
    status_kb("VmHWM:")
}

/// A `/proc/self/status` figure in KiB (0 where there is none).
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The one line both programs print.
pub fn print_result(args: &Args, fields: Value) {
    let mut out = Map::new();
    out.insert("client".into(), json!(args.label));
    out.insert("transport".into(), json!(args.transport()));
    out.insert("mode".into(), json!(args.mode.name()));
    if let Value::Object(f) = fields {
        out.extend(f);
    }
    out.insert("rss_kb".into(), json!(rss_kb()));
    out.insert(
        "rss_base_kb".into(),
        json!(RSS_BASE_KB.get().copied().unwrap_or(0)),
    );
    println!("RESULT {}", Value::Object(out));
}

/// The cold-mode fields.
pub fn cold_fields(args: &Args, mut times: Vec<Duration>, tools: usize) -> Value {
    times.sort();
    json!({"reps": args.reps, "tools": tools, "cold_ms_median": ms(percentile(&times, 0.5)),
           "cold_ms_min": ms(times.first().copied().unwrap_or_default())})
}

/// The seq-mode fields: the median and the 99th percentile of the calls' latencies (the same
/// definition as conc mode's).
pub fn seq_fields(args: &Args, mut times: Vec<Duration>) -> Value {
    let total: Duration = times.iter().sum();
    times.sort();
    json!({"n": args.n, "seq_us_median": us(percentile(&times, 0.5)), "seq_us_p99": us(percentile(&times, 0.99)),
           "seq_ms_total": ms(total)})
}

/// The conc-mode fields: throughput over the wall time of all threads, and the median and
/// 99th percentile of every call's latency, all threads' calls together.
pub fn conc_fields(args: &Args, mut times: Vec<Duration>, wall: Duration) -> Value {
    times.sort();
    let calls = times.len();
    json!({"n": calls, "threads": args.threads, "conc_ms_total": ms(wall),
           "conc_calls_per_s": calls as f64 / wall.as_secs_f64().max(1e-9),
           "conc_us_median": us(percentile(&times, 0.5)), "conc_us_p99": us(percentile(&times, 0.99))})
}

/// The fleet-mode fields.
pub fn fleet_fields(args: &Args, mut times: Vec<Duration>, tools_total: usize) -> Value {
    times.sort();
    json!({"servers": args.fleet, "reps": args.reps, "tools_total": tools_total,
           "fleet_ms_median": ms(percentile(&times, 0.5)), "fleet_ms_min": ms(times.first().copied().unwrap_or_default())})
}

/// The result-mode fields: `n` calls of `bytes` each, their throughput (result bytes over the
/// calls' total time) and median latency.
pub fn result_fields(args: &Args, mut times: Vec<Duration>) -> Value {
    let total: Duration = times.iter().sum();
    times.sort();
    let mb = (args.bytes * times.len()) as f64 / 1e6;
    json!({"n": times.len(), "bytes": args.bytes, "result_ms_total": ms(total),
           "result_mb_per_s": mb / total.as_secs_f64().max(1e-9),
           "result_us_median": us(percentile(&times, 0.5))})
}

/// The cache-mode fields.
pub fn cache_fields(args: &Args, mut times: Vec<Duration>, tools: usize) -> Value {
    times.sort();
    json!({"reps": args.reps, "tools": tools, "cache_ms_median": ms(percentile(&times, 0.5)),
           "cache_ms_min": ms(times.first().copied().unwrap_or_default())})
}

/// The echo call both clients make, and the answer they check.
pub const MESSAGE: &str = "hello world";

/// The tool returning `bytes` bytes of text (`{"bytes": N}`), answered by the bench server.
pub const BLOB: &str = "blob";
