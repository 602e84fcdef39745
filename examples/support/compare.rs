//! How `perf_compare` runs a case: where the programs run (pinned or not), the bench servers
//! (stdio commands, and HTTP servers started once per placement, era and arguments), the
//! interleaved rounds, and the statistics of their per-round figures.

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// Where the client and the server run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Placement {
    /// Wherever the scheduler puts them.
    Free,
    /// Both on CPU 0.
    OneCpu,
    /// The client on CPU 0, the server on CPU 1.
    TwoCpus,
}

impl Placement {
    /// The CPU of the server, when pinned.
    fn server_cpu(self) -> Option<usize> {
        match self {
            Placement::Free => None,
            Placement::OneCpu => Some(0),
            Placement::TwoCpus => Some(1),
        }
    }
}

/// One shape of program run: the benchmark's arguments and its server's.
#[derive(Clone, Debug)]
pub struct Run {
    /// `perf_bench` / `perf_floor` arguments, without `--cmd` / `--url`.
    pub args: Vec<String>,
    /// `bench_server` arguments (`--tools N`); `--stateless` is added for the 2026 era.
    pub server_args: Vec<String>,
    /// Against the HTTP server (else a stdio one).
    pub http: bool,
    pub placement: Placement,
    /// 2026-07-28: the bench server and the floor speak it (our client finds it by itself).
    pub stateless: bool,
    /// Only our client runs (a mode the floor has no counterpart for).
    pub ours_only: bool,
    /// Where the second column is ours too: `perf_bench` with these arguments in place of
    /// `args` runs where the floor would (ours with a feature off, against ours with it on).
    pub baseline: Option<Vec<String>>,
}

/// Strings from string slices.
pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

impl Run {
    /// A stdio run, both clients, unpinned, handshake era.
    pub fn stdio(args: &[&str]) -> Run {
        Run {
            args: strings(args),
            server_args: Vec::new(),
            http: false,
            placement: Placement::Free,
            stateless: false,
            ours_only: false,
            baseline: None,
        }
    }

    /// The same run against ours with `args` in place of the floor (see [`Run::baseline`]).
    pub fn against(mut self, args: &[&str]) -> Run {
        self.baseline = Some(strings(args));
        self
    }

    /// The same run over HTTP.
    pub fn over_http(mut self) -> Run {
        self.http = true;
        self
    }

    /// The same run with the placement pinned.
    pub fn pinned(mut self, placement: Placement) -> Run {
        self.placement = placement;
        self
    }

    /// The same run with these bench server arguments.
    pub fn server(mut self, args: &[&str]) -> Run {
        self.server_args = strings(args);
        self
    }

    /// The same run in the 2026-07-28 era.
    pub fn modern(mut self) -> Run {
        self.stateless = true;
        self.args.push("--stateless".into());
        self
    }
}

/// One round: our figures and the floor's (none for an ours-only run).
pub type Round = (Value, Option<Value>);

/// The machine and the programs.
pub struct Env {
    dir: PathBuf,
    server: String,
    taskset: bool,
    cpus: usize,
    /// HTTP servers started so far: (placement, stateless, server args), the server, its URL.
    http: RefCell<Vec<HttpServer>>,
}

struct HttpServer {
    key: (Placement, bool, Vec<String>),
    child: Child,
    url: String,
}

impl Env {
    /// The programs next to this one (the release examples directory).
    pub fn new() -> Env {
        let dir = std::env::current_exe()
            .expect("own path")
            .parent()
            .expect("a directory")
            .to_path_buf();
        Env {
            server: dir.join("bench_server").display().to_string(),
            dir,
            taskset: Command::new("taskset").arg("--version").output().is_ok(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            http: RefCell::new(Vec::new()),
        }
    }

    /// Why a run with this placement cannot be made here, if it cannot.
    pub fn skip(&self, placement: Placement) -> Option<&'static str> {
        if placement != Placement::Free && !self.taskset {
            return Some("skipped: no taskset");
        }
        if placement == Placement::TwoCpus && self.cpus < 2 {
            return Some("skipped: one CPU");
        }
        None
    }

    /// `rounds` rounds of `run`, ours and the floor's in turn, who goes first alternating
    /// round by round so neither always runs on a warmer machine.
    pub fn rounds(&self, run: &Run, rounds: usize) -> Vec<Round> {
        (0..rounds)
            .map(|round| {
                if run.ours_only {
                    return (self.run("perf_bench", run), None);
                }
                if round % 2 == 0 {
                    let ours = self.run("perf_bench", run);
                    (ours, Some(self.second(run)))
                } else {
                    let floor = self.second(run);
                    (self.run("perf_bench", run), Some(floor))
                }
            })
            .collect()
    }

    /// The second column's run: the floor's, or ours with the run's baseline arguments.
    fn second(&self, run: &Run) -> Value {
        match &run.baseline {
            Some(args) => {
                let baseline = Run {
                    args: args.clone(),
                    ..run.clone()
                };
                self.run("perf_bench", &baseline)
            }
            None => self.run("perf_floor", run),
        }
    }

    /// One run of `client` (`perf_bench` or `perf_floor`): its `RESULT`.
    fn run(&self, client: &str, run: &Run) -> Value {
        let exe = self.dir.join(client);
        let mut cmd = if run.placement == Placement::Free {
            Command::new(&exe)
        } else {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(&exe);
            c
        };
        cmd.args(&run.args);
        if run.http {
            cmd.args(["--url", &self.http_url(run)]);
        } else {
            let mut server = match run.placement.server_cpu() {
                Some(1) => format!("taskset -c 1 {}", self.server),
                _ => self.server.clone(),
            };
            for a in self.server_args(run) {
                server.push(' ');
                server.push_str(&a);
            }
            cmd.args(["--cmd", &server]);
        }
        let out = cmd
            .stderr(Stdio::inherit())
            .output()
            .expect("run a benchmark");
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .unwrap_or_else(|| panic!("{} printed no RESULT line: {text}", exe.display()));
        serde_json::from_str(line).expect("RESULT is JSON")
    }

    fn server_args(&self, run: &Run) -> Vec<String> {
        let mut args = run.server_args.clone();
        if run.stateless {
            args.push("--stateless".into());
        }
        args
    }

    /// The URL of the HTTP server for `run` (pinned as `run` is), started on first use.
    fn http_url(&self, run: &Run) -> String {
        let key = (run.placement, run.stateless, run.server_args.clone());
        let mut servers = self.http.borrow_mut();
        if let Some(s) = servers.iter().find(|s| s.key == key) {
            return s.url.clone();
        }
        let mut command = match run.placement.server_cpu() {
            Some(cpu) => {
                let mut c = Command::new("taskset");
                c.args(["-c", &cpu.to_string(), &self.server]);
                c
            }
            None => Command::new(&self.server),
        };
        command.arg("--http").args(self.server_args(run));
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the HTTP bench server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("its URL");
        let url = line.trim().to_owned();
        assert!(
            url.starts_with("http://"),
            "the HTTP bench server said {url:?}"
        );
        servers.push(HttpServer {
            key,
            child,
            url: url.clone(),
        });
        url
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for s in self.http.get_mut() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
    }
}

/// A figure of a `RESULT`: a number field, or NaN.
pub fn field(v: &Value, name: &str) -> f64 {
    v[name].as_f64().unwrap_or(f64::NAN)
}

/// The memory a run's work took, KiB: its peak minus its resident size at the start.
pub fn work_kb(v: &Value) -> f64 {
    field(v, "rss_kb") - field(v, "rss_base_kb")
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The smallest and the largest of `v`.
pub fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

/// Ours against the floor over the rounds, as a ratio (ours / floor) or a difference
/// (ours − floor).
pub struct Compared {
    pub ours: f64,
    pub floor: f64,
    /// The medians' ratio or difference.
    pub value: f64,
    /// The smallest and largest of the per-round ratios or differences.
    pub range: (f64, f64),
}

/// Compares the figure `f` of each round's two results (the floor's figures are NaN in an
/// ours-only run).
pub fn compare(rounds: &[Round], f: impl Fn(&Value) -> f64, difference: bool) -> Compared {
    let ours: Vec<f64> = rounds.iter().map(|(o, _)| f(o)).collect();
    let floor: Vec<f64> = rounds
        .iter()
        .map(|(_, fl)| fl.as_ref().map_or(f64::NAN, &f))
        .collect();
    let of = |o: f64, fl: f64| if difference { o - fl } else { o / fl };
    let per_round: Vec<f64> = ours.iter().zip(&floor).map(|(o, fl)| of(*o, *fl)).collect();
    let (o, fl) = (median(&ours), median(&floor));
    Compared {
        ours: o,
        floor: fl,
        value: of(o, fl),
        range: min_max(&per_round),
    }
}
