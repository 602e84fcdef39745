//! The scaling section of `perf_compare` (`--scaling`): how each cost grows with the work.
//!
//! Each row is one figure per unit of work (per server, per tool, per MB, per call, per
//! caller) at each size, ours and the floor's (the floor has no tool cache: `-`), with the
//! ratio of the medians and the range of the per-round ratios, as in the main table. `growth`
//! is the per-unit cost at that size over the per-unit cost at the smallest size (for a
//! throughput, the cost is its inverse), ours and the floor's; the largest size's line says
//! `linear` or `NOT LINEAR`: ours is not linear when its per-unit cost at the largest size is
//! more than 1.5 times its cost at the smallest (`(floor too)` when the floor's is as well,
//! which points at the server or the machine rather than the client). A fixed cost per run
//! weighs most at the smallest size and can hide a cost that grows faster later, so a linear
//! row whose last step alone grew more than 1.5 times says so (`but N.NNx over the last
//! step`).
//!
//! Memory per unit is the work's memory (`rss_kb − rss_base_kb`: the peak minus the resident
//! size when the program started) over the units, so it includes the client's one-time cost
//! (code paged in, first buffers), which a small size divides by fewer units.
//!
//! The cost of five features of ours, each a family of its own (see [`feature_families`]):
//!
//! - **The tool search index** over 1,000 and 10,000 real catalogue tools (ours only:
//!   `perf_bench --mode index`): its build time, its memory and a search's time per tool,
//!   and a search's time as a share of listing the same tools (`tools/list` from a server).
//! - **The output budget** on results of 1 KB, 1 MB and 16 MB (`perf_bench --mode render`,
//!   the default 25,000 tokens): ours through the budget against ours unbudgeted (`--budget
//!   none`), in the floor's column; the ratio is budgeted / unbudgeted MB/s.
//! - **Extensions**: a stdio cold connect declaring none (`--extensions none`) against the
//!   floor, and one declaring Apps, Skills and tasks to a server that declares them too
//!   (`--extensions all`) against ours declaring none (the floor's column).
//! - **The sandbox**: a stdio cold connect and a fleet of 20 with every server in the sandbox
//!   (`--sandbox`: Landlock, namespaces, seccomp; no network) against ours unsandboxed (the
//!   floor's column).
//! - **A proxy configured and bypassed**: HTTP sequential calls with `--proxy
//!   http://127.0.0.1:9 --no-proxy 127.0.0.1` (were the proxy used, every call would fail)
//!   against ours with no proxy (the floor's column).
//!
//! Where the floor's column is ours (a run's `baseline`), the family's title says so; a family
//! of one size has no growth (`-`) and no verdict.

use serde_json::Value;

use crate::compare::{self, field, strings, work_kb, Env, Placement, Run};

/// A figure per unit, read from one `RESULT` at one size.
type PerUnit = fn(&Value, usize) -> f64;

/// One scaling row: a figure per unit at each size.
struct Figure {
    label: &'static str,
    per_unit: PerUnit,
    /// A throughput (higher is better; its cost is its inverse).
    throughput: bool,
}

/// The runs at each size, and the figures read from them.
struct Family {
    /// What is scaled, for the header.
    title: &'static str,
    sizes: &'static [usize],
    size_label: fn(usize) -> String,
    run: fn(usize, bool) -> Run,
    figures: Vec<Figure>,
}

/// A growth above this (per-unit cost at the largest size over the smallest's) is not linear.
pub const NOT_LINEAR: f64 = 1.5;

fn plain(n: usize) -> String {
    n.to_string()
}

fn bytes_label(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{} MB", n >> 20),
        n if n >= 1 << 10 => format!("{} KB", n >> 10),
        n => format!("{n} B"),
    }
}

fn figure(label: &'static str, per_unit: PerUnit, throughput: bool) -> Figure {
    Figure {
        label,
        per_unit,
        throughput,
    }
}

fn families() -> Vec<Family> {
    let mut families = vec![
        Family {
            title: "fleets of stdio servers (50 tools each) through the manager",
            sizes: &[5, 20, 100],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "1" } else { "3" };
                Run::stdio(&["--mode", "fleet", "--fleet", &n.to_string(), "--reps", reps])
                    .server(&["--tools", "50"])
            },
            figures: vec![
                figure(
                    "scaling fleet: ms per server",
                    |v, n| field(v, "fleet_ms_median") / n as f64,
                    false,
                ),
                figure(
                    "scaling fleet: KB per server",
                    |v, n| work_kb(v) / n as f64,
                    false,
                ),
            ],
        },
        Family {
            title: "a stdio cold connect listing N tools (spawn, handshake, tools/list)",
            sizes: &[50, 500, 5000],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "2" } else { "10" };
                Run::stdio(&["--mode", "cold", "--reps", reps]).server(&["--tools", &n.to_string()])
            },
            figures: vec![
                figure(
                    "scaling listing: us per tool",
                    |v, n| field(v, "cold_ms_median") * 1e3 / n as f64,
                    false,
                ),
                figure(
                    "scaling listing: bytes per tool",
                    |v, n| work_kb(v) * 1024.0 / n as f64,
                    false,
                ),
            ],
        },
        Family {
            title: "N tools from the tool cache at a second start (ours only)",
            sizes: &[50, 500, 5000],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "2" } else { "5" };
                let mut run = Run::stdio(&["--mode", "cache", "--reps", reps])
                    .server(&["--tools", &n.to_string()]);
                run.ours_only = true;
                run
            },
            figures: vec![
                figure(
                    "scaling cached: us per tool",
                    |v, n| field(v, "cache_ms_median") * 1e3 / n as f64,
                    false,
                ),
                figure(
                    "scaling cached: bytes per tool",
                    |v, n| work_kb(v) * 1024.0 / n as f64,
                    false,
                ),
            ],
        },
        Family {
            title: "tool results of N bytes over stdio (two CPUs)",
            sizes: &[1 << 10, 1 << 20, 16 << 20],
            size_label: bytes_label,
            run: |n, quick| result_run(n, quick),
            figures: vec![figure(
                "scaling stdio result: MB/s",
                |v, _| field(v, "result_mb_per_s"),
                true,
            )],
        },
        Family {
            title: "tool results of N bytes over HTTP (two CPUs)",
            sizes: &[1 << 10, 1 << 20, 16 << 20],
            size_label: bytes_label,
            run: |n, quick| result_run(n, quick).over_http(),
            figures: vec![figure(
                "scaling http result: MB/s",
                |v, _| field(v, "result_mb_per_s"),
                true,
            )],
        },
        Family {
            title: "N concurrent callers on one stdio connection (two CPUs)",
            sizes: &[1, 8, 64],
            size_label: plain,
            run: |n, quick| {
                let calls = if quick { 2000 } else { 8000 };
                Run::stdio(&[
                    "--mode",
                    "conc",
                    "--n",
                    &calls.to_string(),
                    "--threads",
                    &n.to_string(),
                ])
                .pinned(Placement::TwoCpus)
            },
            figures: vec![
                figure(
                    "scaling callers: us per call",
                    |v, _| 1e6 / field(v, "conc_calls_per_s"),
                    false,
                ),
                figure(
                    "scaling callers: p99 us per caller",
                    |v, n| field(v, "conc_us_p99") / n as f64,
                    false,
                ),
            ],
        },
    ];
    families.extend(feature_families());
    families
}

/// The cost of four features of ours (see the module docs).
fn feature_families() -> Vec<Family> {
    vec![
        Family {
            title: "the tool search index over N catalogue tools (ours only)",
            sizes: &[1000, 10_000],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "1" } else { "5" };
                let mut run =
                    Run::stdio(&["--mode", "index", "--n", &n.to_string(), "--reps", reps]);
                run.ours_only = true;
                run
            },
            figures: vec![
                figure(
                    "scaling index: build us per tool",
                    |v, _| field(v, "index_build_ms") * 1e3 / field(v, "tools"),
                    false,
                ),
                figure(
                    "scaling index: bytes per tool",
                    |v, _| field(v, "index_bytes") / field(v, "tools"),
                    false,
                ),
                figure(
                    "scaling index: search ns per tool",
                    |v, _| field(v, "index_search_us") * 1e3 / field(v, "tools"),
                    false,
                ),
                figure(
                    "scaling index: listing us per tool",
                    |v, _| field(v, "list_ms") * 1e3 / field(v, "tools"),
                    false,
                ),
                figure(
                    "scaling index: search % of listing",
                    |v, _| field(v, "index_search_us") / (field(v, "list_ms") * 1e3) * 100.0,
                    false,
                ),
            ],
        },
        Family {
            title: "tool results of N bytes for the model, the 25,000-token budget \
                    (floor column: ours unbudgeted)",
            sizes: &[1 << 10, 1 << 20, 16 << 20],
            size_label: bytes_label,
            run: |n, quick| {
                let args = |budget: &str| {
                    let (bytes, calls) = (n.to_string(), result_calls(n, quick).to_string());
                    let args = ["--mode", "render", "--bytes", &bytes, "--n", &calls];
                    let mut args = strings(&args);
                    args.extend(strings(&["--budget", budget]));
                    args
                };
                let mut run = Run::stdio(&[])
                    .server(&["--list-blob"])
                    .pinned(Placement::TwoCpus);
                run.args = args("25000");
                run.baseline = Some(args("none"));
                run
            },
            figures: vec![figure(
                "scaling budget: MB/s",
                |v, _| field(v, "result_mb_per_s"),
                true,
            )],
        },
        Family {
            title: "a stdio cold connect (20 tools) declaring no extension",
            sizes: &[20],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "4" } else { "20" };
                Run::stdio(&["--mode", "cold", "--reps", reps, "--extensions", "none"])
                    .server(&["--tools", &n.to_string()])
            },
            figures: vec![figure(
                "scaling extensions none: cold ms",
                |v, _| field(v, "cold_ms_median"),
                false,
            )],
        },
        Family {
            title: "the same declaring Apps, Skills, tasks, agreed \
                    (floor column: ours declaring none)",
            sizes: &[20],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "4" } else { "20" };
                let cold = ["--mode", "cold", "--reps", reps, "--extensions"];
                let none: Vec<&str> = cold.iter().copied().chain(["none"]).collect();
                Run::stdio(&[&cold[..], &["all"]].concat())
                    .server(&["--tools", &n.to_string(), "--extensions"])
                    .against(&none)
            },
            figures: vec![figure(
                "scaling extensions all: cold ms",
                |v, _| field(v, "cold_ms_median"),
                false,
            )],
        },
        Family {
            title: "a stdio cold connect (20 tools) in the sandbox \
                    (floor column: ours unsandboxed)",
            sizes: &[20],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "4" } else { "20" };
                let cold = ["--mode", "cold", "--reps", reps];
                Run::stdio(&[&cold[..], &["--sandbox"]].concat())
                    .server(&["--tools", &n.to_string()])
                    .against(&cold)
            },
            figures: vec![figure(
                "scaling sandbox: cold ms",
                |v, _| field(v, "cold_ms_median"),
                false,
            )],
        },
        Family {
            title: "a fleet of N stdio servers (50 tools each) in the sandbox \
                    (floor column: ours unsandboxed)",
            sizes: &[20],
            size_label: plain,
            run: |n, quick| {
                let reps = if quick { "2" } else { "5" };
                let fleet = ["--mode", "fleet", "--fleet", &n.to_string(), "--reps", reps];
                Run::stdio(&[&fleet[..], &["--sandbox"]].concat())
                    .server(&["--tools", "50"])
                    .against(&fleet)
            },
            figures: vec![
                figure(
                    "scaling sandbox: fleet ms",
                    |v, _| field(v, "fleet_ms_median"),
                    false,
                ),
                figure("scaling sandbox: fleet KB", |v, _| work_kb(v), false),
            ],
        },
        Family {
            title: "N HTTP sequential calls, a proxy configured and bypassed \
                    (floor column: ours with no proxy)",
            sizes: &[4000],
            size_label: plain,
            run: |n, quick| {
                let n = (n / if quick { 4 } else { 1 }).to_string();
                let seq = ["--mode", "seq", "--n", &n];
                let proxy = ["--proxy", "http://127.0.0.1:9", "--no-proxy", "127.0.0.1"];
                Run::stdio(&[&seq[..], &proxy].concat())
                    .over_http()
                    .pinned(Placement::TwoCpus)
                    .against(&seq)
            },
            figures: vec![figure(
                "scaling proxy bypassed: us per call",
                |v, _| field(v, "seq_us_median"),
                false,
            )],
        },
    ]
}

/// How many `blob` calls of `bytes` each: about 64 MB in all (at least 4 calls, at most
/// 2000; a quarter of that, at least 2, with `quick`).
fn result_calls(bytes: usize, quick: bool) -> usize {
    let n = ((64usize << 20) / bytes).clamp(4, 2000) / if quick { 4 } else { 1 };
    n.max(2)
}

/// `blob` calls of `bytes` each (see [`result_calls`]).
fn result_run(bytes: usize, quick: bool) -> Run {
    Run::stdio(&[
        "--mode",
        "result",
        "--bytes",
        &bytes.to_string(),
        "--n",
        &result_calls(bytes, quick).to_string(),
    ])
    .pinned(Placement::TwoCpus)
}

/// Runs every wanted family and prints its rows.
pub fn run(env: &Env, rounds: usize, quick: bool, wanted: &dyn Fn(&str) -> bool) {
    println!();
    println!(
        "{:36} {:>6} {:>10} {:>10} {:>7} {:>11} {:>14}",
        "scaling (per unit)", "size", "ours", "floor", "ratio", "range", "growth ours/fl"
    );
    for family in families() {
        let figures: Vec<&Figure> = family.figures.iter().filter(|f| wanted(f.label)).collect();
        if figures.is_empty() {
            continue;
        }
        println!("-- {}", family.title);
        let probe = (family.run)(family.sizes[0], quick);
        if let Some(why) = env.skip(probe.placement) {
            println!("   ({why})");
            continue;
        }
        let results: Vec<(usize, Vec<compare::Round>)> = family
            .sizes
            .iter()
            .map(|&n| (n, env.rounds(&(family.run)(n, quick), rounds)))
            .collect();
        for f in figures {
            print_figure(&family, f, &results);
        }
    }
}

/// The lines of one figure, one per size.
fn print_figure(family: &Family, f: &Figure, results: &[(usize, Vec<compare::Round>)]) {
    let cost = |x: f64| if f.throughput { 1.0 / x } else { x };
    let shown = |x: f64| {
        if x.is_nan() {
            "-".to_owned()
        } else {
            format!("{x:.2}")
        }
    };
    // Per-unit costs, ours and the floor's, at each size.
    let mut costs: Vec<(f64, f64)> = Vec::new();
    for (i, (n, rounds)) in results.iter().enumerate() {
        let c = compare::compare(rounds, |v| (f.per_unit)(v, *n), false);
        costs.push((cost(c.ours), cost(c.floor)));
        let (o0, fl0) = costs[0];
        let (o, fl) = costs[i];
        let (growth, growth_floor) = (o / o0, fl / fl0);
        let (ratio, range) = if c.floor.is_nan() {
            ("-".to_owned(), "-".to_owned())
        } else {
            (
                format!("{:.2}x", c.value),
                format!("{:.2}-{:.2}", c.range.0, c.range.1),
            )
        };
        let verdict = if i + 1 < results.len() || results.len() == 1 {
            String::new()
        } else {
            let step = i.checked_sub(1).map_or(1.0, |p| o / costs[p].0);
            verdict(growth, growth_floor, step)
        };
        let label = if i == 0 { f.label } else { "" };
        println!(
            "{label:36} {:>6} {:>10} {:>10} {ratio:>7} {range:>11} {:>6}/{:<7} {verdict}",
            (family.size_label)(*n),
            shown(c.ours),
            shown(c.floor),
            // One size: no growth.
            shown(if results.len() == 1 { f64::NAN } else { growth }),
            shown(if results.len() == 1 {
                f64::NAN
            } else {
                growth_floor
            }),
        );
    }
}

/// `linear` or `NOT LINEAR` from ours' growth (largest size over smallest), noting when the
/// floor grew as much, and when the last step alone grew by more than [`NOT_LINEAR`] (a
/// fixed cost at the smallest size can hide that).
fn verdict(growth: f64, growth_floor: f64, step: f64) -> String {
    let mut v = if growth > NOT_LINEAR {
        "NOT LINEAR".to_owned()
    } else {
        "linear".to_owned()
    };
    if growth > NOT_LINEAR && growth_floor > NOT_LINEAR {
        v.push_str(" (floor too)");
    }
    if growth <= NOT_LINEAR && step > NOT_LINEAR {
        v.push_str(&format!(" (but {step:.2}x over the last step)"));
    }
    v
}
