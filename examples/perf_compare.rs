//! Runs our client (`perf_bench`) and the raw floor (`perf_floor`) side by side against the
//! bench server, interleaved round by round so both see the same machine, and prints the
//! medians, their ratios (ours / floor, or for memory ours − floor), the spread of the
//! per-round ratios, and each row's target and verdict.
//!
//! ```text
//! cargo build --release --examples && target/release/examples/perf_compare [--rounds N] [--quick]
//!     [--only TEXT] [--scaling]
//! ```
//!
//! It expects `perf_bench`, `perf_floor` and `bench_server` next to itself (the release
//! examples directory). Only the ratios mean anything: absolute times depend on the machine.
//!
//! - `--rounds N` (default 5): each case runs N times for each client, who goes first
//!   alternating round by round. A row shows the medians over the rounds, the ratio of the
//!   medians, and `range`, the smallest and largest of the N per-round ratios (ours / floor of
//!   the same round). The verdict is the median ratio's.
//! - Placement: a sequential run settles on one CPU or two at the scheduler's whim, so those
//!   cases are pinned with `taskset` (client on CPU 0; server on CPU 0 or on CPU 1); the
//!   unpinned rows are for information.
//! - `--quick`: a quarter of the calls (and fewer repetitions in the scaling section); to see
//!   that everything runs, not to report.
//! - `--only TEXT`: only the cases with a row whose name contains TEXT (the scaling rows are
//!   all named `scaling ...`, so `--scaling --only scaling` runs the scaling section alone).
//! - `--scaling`: after the main table, the scaling section (see `support/scaling.rs`): how
//!   each cost grows with the work (fleets of 5, 20, 100 stdio servers; listings of 50, 500,
//!   5000 tools, cold and from the tool cache; results of 1 KB, 1 MB, 16 MB; 1, 8, 64 callers
//!   on one connection), as a figure per unit at each size, ours and the floor's, and whether
//!   ours grows linearly; then the cost of four features of ours: the tool search index over
//!   1,000 and 10,000 catalogue tools (`scaling index`: build, memory and a search per tool,
//!   and a search against listing the same tools; ours only), the output budget on results of
//!   1 KB, 1 MB, 16 MB against the same unbudgeted (`scaling budget`), a cold connect with no
//!   extension against the floor and with Apps, Skills and tasks against none (`scaling
//!   extensions`), and HTTP calls with a proxy configured and bypassed against none (`scaling
//!   proxy`). In those last three the floor's column is ours without the feature, as each
//!   family's title says.
//!
//! Memory rows compare the peak resident memory (`rss_kb`, VmHWM) of the two programs, as a
//! difference in KiB (`+KB`) or a ratio; the `rss+KB` column shows that difference for every
//! case.

#[path = "support/compare.rs"]
mod compare;
#[path = "support/scaling.rs"]
mod scaling;

use compare::{field, Compared, Env, Placement, Run};

/// What a row checks.
#[derive(Clone, Copy)]
enum Target {
    /// ours / floor at most this.
    AtMost(f64),
    /// ours / floor at least this (a throughput).
    AtLeast(f64),
    /// ours − floor at most this many KiB.
    KbOver(f64),
    /// ours / floor, shown for information.
    Info,
}

/// One line of the table: a figure of a case's runs against its target.
struct Row {
    label: String,
    metric: &'static str,
    target: Target,
}

/// One run shape, and the rows read from its rounds.
struct Case {
    run: Run,
    rows: Vec<Row>,
    /// Also run in the 2026-07-28 era, with the same targets (its rows prefixed `2026 `).
    modern: bool,
}

fn row(label: &str, metric: &'static str, target: Target) -> Row {
    Row {
        label: label.to_owned(),
        metric,
        target,
    }
}

/// The cases of issue 18's table, with its targets.
fn cases(quick: bool) -> Vec<Case> {
    use Target::*;
    let scale = if quick { 4 } else { 1 };
    let n_seq = (4000 / scale).to_string();
    let n_conc = (40000 / scale).to_string();
    let seq = || Run::stdio(&["--mode", "seq", "--n", &n_seq]);
    let conc = || Run::stdio(&["--mode", "conc", "--n", &n_conc, "--threads", "8"]);
    let cold = || Run::stdio(&["--mode", "cold", "--reps", "20"]);
    let fleet = || Run::stdio(&["--mode", "fleet", "--fleet", "20", "--reps", "15"]);
    let case = |run: Run, rows: Vec<Row>, modern: bool| Case { run, rows, modern };
    vec![
        // Unpinned, a sequential stdio run settles either with client and server on one CPU
        // (a round trip of a few microseconds) or across two (tens), at the scheduler's whim,
        // for ours and the floor alike; the ratio of such runs compares placements, not
        // clients. The pinned rows fix the placement; the free one is for information.
        case(
            seq().pinned(Placement::TwoCpus),
            vec![
                row("stdio seq p50, two CPUs", "seq_us_median", AtMost(1.1)),
                row("stdio seq p99, two CPUs", "seq_us_p99", AtMost(1.2)),
                row("stdio seq peak RSS, two CPUs", "rss_kb", KbOver(512.0)),
            ],
            true,
        ),
        case(
            seq().pinned(Placement::OneCpu),
            vec![
                row("stdio seq p50, one CPU", "seq_us_median", AtMost(1.25)),
                row("stdio seq p99, one CPU", "seq_us_p99", Info),
            ],
            false,
        ),
        case(
            seq(),
            vec![row("stdio seq p50, unpinned", "seq_us_median", Info)],
            false,
        ),
        case(
            conc(),
            vec![
                row(
                    "stdio 8-thread calls/s",
                    "conc_calls_per_s",
                    AtLeast(1.0 / 1.1),
                ),
                row("stdio 8-thread p99", "conc_us_p99", AtMost(1.5)),
            ],
            true,
        ),
        case(
            cold(),
            vec![row("stdio cold connect", "cold_ms_median", AtMost(1.2))],
            true,
        ),
        case(
            fleet().server(&["--tools", "50"]),
            vec![
                row(
                    "stdio fleet of 20 (50 tools)",
                    "fleet_ms_median",
                    AtMost(1.1),
                ),
                row("stdio fleet of 20 peak RSS", "rss_kb", AtMost(1.0)),
            ],
            false,
        ),
        case(
            cold().over_http(),
            vec![row("http cold connect", "cold_ms_median", AtMost(1.2))],
            true,
        ),
        // Sequential HTTP settles on one CPU or two at random too (the server's thread and
        // the client's), so it is pinned both ways like stdio.
        case(
            seq().over_http().pinned(Placement::TwoCpus),
            vec![
                row("http seq p50, two CPUs", "seq_us_median", AtMost(1.25)),
                row("http seq p99, two CPUs", "seq_us_p99", Info),
                row("http seq peak RSS, two CPUs", "rss_kb", KbOver(512.0)),
            ],
            true,
        ),
        case(
            seq().over_http().pinned(Placement::OneCpu),
            vec![row("http seq p50, one CPU", "seq_us_median", AtMost(1.15))],
            false,
        ),
        case(
            seq().over_http(),
            vec![row("http seq p50, unpinned", "seq_us_median", Info)],
            false,
        ),
        case(
            fleet().over_http(),
            vec![
                row("http fleet of 20 sessions", "fleet_ms_median", AtMost(1.2)),
                row("http fleet of 20 peak RSS", "rss_kb", AtMost(1.0)),
            ],
            true,
        ),
        case(
            conc().over_http(),
            vec![
                row(
                    "http 8-thread calls/s",
                    "conc_calls_per_s",
                    AtLeast(1.0 / 1.1),
                ),
                row("http 8-thread p99", "conc_us_p99", Info),
            ],
            false,
        ),
    ]
}

/// Each case marked `modern` again in the 2026-07-28 era: per-request `_meta` and headers
/// must cost no more than they cost the floor.
fn with_modern(cases: Vec<Case>) -> Vec<Case> {
    let modern: Vec<Case> = cases
        .iter()
        .filter(|c| c.modern)
        .map(|c| Case {
            run: c.run.clone().modern(),
            rows: c
                .rows
                .iter()
                .map(|r| Row {
                    label: format!("2026 {}", r.label),
                    ..*r
                })
                .collect(),
            modern: false,
        })
        .collect();
    cases.into_iter().chain(modern).collect()
}

const USAGE: &str = "usage: perf_compare [--rounds N] [--quick] [--only TEXT] [--scaling]
  --only scaling (with --scaling): the scaling section alone; --only \"scaling NAME\" one family
  of it: fleet, listing, cached, stdio result, http result, callers, index (the tool search
  index), budget (the output budget), extensions, proxy (a proxy configured and bypassed)";

fn main() {
    let mut rounds = 5;
    let mut quick = false;
    let mut only: Option<String> = None;
    let mut scaling = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            "--quick" => quick = true,
            "--only" => only = it.next(),
            "--scaling" => scaling = true,
            other => {
                eprintln!("{USAGE}\n(unknown {other})");
                std::process::exit(2);
            }
        }
    }
    let rounds = rounds.max(1);
    let env = Env::new();
    let wanted = |name: &str| only.as_ref().is_none_or(|o| name.contains(o.as_str()));
    let cases: Vec<Case> = with_modern(cases(quick))
        .into_iter()
        .filter(|c| c.rows.iter().any(|r| wanted(&r.label)))
        .collect();
    if cases.is_empty() && !scaling {
        println!("(no case of the main table matches; the scaling rows need --scaling)");
    }
    if !cases.is_empty() {
        println!(
            "{:34} {:>11} {:>11} {:>9} {:>15}   {:13} {:>7}",
            "case", "ours", "floor", "ratio", "range", "target", "rss+KB"
        );
    }
    for case in &cases {
        if let Some(why) = env.skip(case.run.placement) {
            for r in &case.rows {
                println!("{:34} ({why})", r.label);
            }
            continue;
        }
        let results = env.rounds(&case.run, rounds);
        let rss = compare::compare(&results, |v| field(v, "rss_kb"), true);
        for r in &case.rows {
            let kb = matches!(r.target, Target::KbOver(_));
            let c = compare::compare(&results, |v| field(v, r.metric), kb);
            print_row(&r.label, &c, r.target, rss.value);
        }
    }
    if scaling {
        scaling::run(&env, rounds, quick, &wanted);
    }
}

fn print_row(label: &str, c: &Compared, target: Target, rss_kb: f64) {
    let (value, range) = match target {
        Target::KbOver(_) => (
            format!("{:+.0} KB", c.value),
            format!("{:+.0}..{:+.0}", c.range.0, c.range.1),
        ),
        _ => (
            format!("{:.2}x", c.value),
            format!("{:.2}-{:.2}", c.range.0, c.range.1),
        ),
    };
    let (target, verdict) = match target {
        Target::AtMost(t) => (format!("<= {t:?}"), c.value <= t),
        Target::AtLeast(t) => (format!(">= {t:.2}"), c.value >= t),
        Target::KbOver(t) => (format!("<= +{t:.0} KB"), c.value <= t),
        Target::Info => ("info".to_owned(), true),
    };
    let verdict = match (target.as_str(), verdict) {
        ("info", _) => "",
        (_, true) => "ok",
        (_, false) => "MISSED",
    };
    println!(
        "{label:34} {:>11.1} {:>11.1} {value:>9} {range:>15}   {target:13} {rss_kb:>+7.0} {verdict}",
        c.ours, c.floor
    );
}
