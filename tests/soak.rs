//! The soak: a fleet of servers (stdio test servers, and `server-everything` over Streamable
//! HTTP) under random calls, cancels, timeouts and progress while servers are killed with
//! SIGKILL, HTTP servers restarted (their sessions gone) or cut while idle, `list_changed`
//! storms, reloads of one server or of all, and tool cache files rewritten; the manager's
//! `ReconnectPolicy` brings dead servers back. With the `fault-injection` feature (the tests'
//! build), the faults also put a panic at one of the library's panic boundaries now and then
//! (a connect, a refresh, a teardown, a close, a send, a stdio reader or writer, an HTTP worker,
//! a GET stream, a notification, a server request): a server it ends comes back as from a
//! death, and every count still holds.
//!
//! At each quiet point (nothing in flight) it checks that every server is back with every tool
//! it had, that descriptors, threads and child processes are back to their baseline and that
//! resident memory stays within [`RSS_SLACK_KB`] of it (and, in a long run, grows no faster
//! than [`RSS_SLOPE_KB_PER_MIN`] across the deep quiet points). Every call ends within [`CALL_SLACK`] of
//! its deadline (or of its cancel); an echo answers its own message; a server cut while idle is
//! never reported as needing a login. The first breach stops the run with what it saw.
//!
//! `MCP_SOAK_SECS` (default 10, plus a last quiet point that waits out the HTTP workers' 30 s of idleness) sets its length, `MCP_SOAK_SERVERS` (default 50, a fifth of them
//! HTTP) its fleet, `MCP_SOAK_REPORT` a file for its figures (also printed). `.ci/run` runs it
//! for two minutes; CONTRIBUTING.md has an hour's figures.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::everything::HttpEverything;
use mcp_runtime::manager::{FileToolCache, ReconnectPolicy};
use mcp_runtime::{CallOptions, CancelToken, Error, ManagerOptions, McpManager, ServerConfig};
use parking_lot::{Mutex, RwLock};
use serde_json::{json, Value};

use common::soak::{Counts, Rng};

#[path = "soak/fleet.rs"]
mod fleet;
use fleet::start_fleet;

/// How far past its deadline (or its cancel) a call may end.
const CALL_SLACK: Duration = Duration::from_secs(3);
/// How far over the first quiet point's resident memory a later one may be.
const RSS_SLACK_KB: u64 = 64 * 1024;
/// How fast resident memory may grow at the deep quiet points of a long run (7.5 MiB an hour).
const RSS_SLOPE_KB_PER_MIN: f64 = 128.0;
/// Threads and descriptors over the baseline a quiet point tolerates (a thread that is ending).
const THREAD_SLACK: usize = 2;
const FD_SLACK: usize = 4;
/// Threads making calls.
const WORKERS: usize = 6;
/// An idle HTTP worker's life (the transport's pool).
const POOL_IDLE: Duration = Duration::from_secs(30);
/// Every this many quiet points, one waits for the HTTP workers to be back to the baseline.
const DEEP_EVERY: usize = 10;
/// How long a quiet point waits for the fleet to be back.
const SETTLE: Duration = Duration::from_secs(90);

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_fleet_survives_hours_of_faults_and_comes_back_whole() {
    let secs = env_number("MCP_SOAK_SECS", 10);
    let servers = env_number("MCP_SOAK_SERVERS", 50) as usize;
    let quiet_every = Duration::from_secs(env_number(
        "MCP_SOAK_QUIET_SECS",
        if secs > 300 { 60 } else { 5 },
    ));
    let dir = common::temp_dir("soak");
    let tag = format!("soak-{}", std::process::id());
    let before = Counts::now();
    // The manager made here carries the hook to its threads; each worker sets it too.
    #[cfg(feature = "fault-injection")]
    let _faults = fleet::injected();
    #[cfg(feature = "fault-injection")]
    fleet::quiet_injected_panics();
    let soak = start_fleet(servers, &dir, &tag);

    // The baseline: the fleet whole, nothing in flight.
    let expected = BTreeMap::new();
    soak.fleet_back(&expected)
        .unwrap_or_else(|e| panic!("the fleet did not start: {e}"));
    let expected = soak.offered();
    // Each server once through what starts a connection's lazy threads (notifications).
    std::thread::scope(|s| {
        for name in soak.names() {
            let soak = &soak;
            s.spawn(move || soak.warm_up(&name));
        }
    });
    soak.fleet_back(&expected)
        .unwrap_or_else(|e| panic!("the fleet did not warm up: {e}"));
    let mut baseline = before;
    let mut base_threads = Default::default();
    let mut base_fds = Default::default();
    let mut points = Vec::new();
    // The deep points' RSS (no HTTP worker alive) and the baseline's: the slope that counts.
    let mut deep_points = Vec::new();
    let mut quiet_points = 0;
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    std::thread::scope(|s| {
        // However this thread leaves the scope (a panic included), the others stop.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _stop = StopOnDrop(&soak.stop);
        {
            // The workers wait at the gate while the baseline is taken.
            let _quiet = soak.gate.write();
            for w in 0..WORKERS as u64 {
                let soak = &soak;
                s.spawn(move || {
                    #[cfg(feature = "fault-injection")]
                    let _faults = fleet::injected();
                    soak.guarded("worker", || soak.worker(0x5eed + w))
                });
            }
            s.spawn(|| soak.guarded("faults", || soak.chaos(0xc4a05)));
            baseline = Counts::settled(Counts::now);
            base_threads = common::soak::thread_names();
            base_fds = common::soak::fd_kinds();
            points.push((0.0f64, baseline.rss_kb));
            deep_points.push((0.0f64, baseline.rss_kb));
        }
        while Instant::now() < end && !soak.stop.load(Ordering::SeqCst) {
            let next = (Instant::now() + quiet_every).min(end);
            while Instant::now() < next && !soak.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            // Every operation is bounded, so the gate comes; if it does not, one hangs.
            let Some(_quiet) = soak.gate.try_write_for(SETTLE) else {
                soak.fail(format!("an operation did not end within {SETTLE:?}"));
                break;
            };
            if soak.stop.load(Ordering::SeqCst) {
                break;
            }
            if let Err(e) = soak.fleet_back(&expected) {
                soak.fail(e);
                break;
            }
            // Every few quiet points (and at the last), the HTTP workers must have gone too: a
            // deep point waits out their idle time.
            quiet_points += 1;
            let deep = quiet_points % DEEP_EVERY == 0 || Instant::now() + quiet_every >= end;
            // A deep point: every HTTP worker idle past its time has gone (the GET streams
            // have threads of their own), so none is left.
            let pool = if deep {
                0
            } else {
                soak.http.len() * (WORKERS + 2)
            };
            let kept = soak.http.len() * WORKERS;
            let check =
                |c: &Counts| c.within(&baseline, pool, kept, THREAD_SLACK, FD_SLACK, RSS_SLACK_KB);
            let bound = if deep {
                POOL_IDLE + Duration::from_secs(10)
            } else {
                Duration::from_secs(10)
            };
            let now = Counts::until(bound, |c| check(c).is_ok());
            if let Err(e) = check(&now) {
                let threads = common::soak::thread_names();
                let more: Vec<String> = threads
                    .iter()
                    .filter(|(k, n)| base_threads.get(*k).is_none_or(|b| *n > b))
                    .map(|(k, n)| format!("{k} {n} (was {})", base_threads.get(k).unwrap_or(&0)))
                    .collect();
                soak.fail(format!(
                    "at {:?}: {e}; threads over the baseline: {more:?}; descriptors {:?} (baseline {base_fds:?})",
                    start.elapsed(),
                    common::soak::fd_kinds()
                ));
                break;
            }
            points.push((start.elapsed().as_secs_f64(), now.rss_kb));
            if deep {
                deep_points.push((start.elapsed().as_secs_f64(), now.rss_kb));
            }
            eprintln!(
                "soak: {:>5}s{} {now}",
                start.elapsed().as_secs(),
                if deep { " (deep)" } else { "" }
            );
        }
        soak.stop.store(true, Ordering::SeqCst);
    });
    let last = Counts::now();
    soak.manager.close();
    for server in soak.http.values() {
        server.lock().process = None;
    }
    let gone = common::holds_within(Duration::from_secs(20), || {
        soak.configs
            .keys()
            .all(|n| common::processes_tagged(&format!("{tag}-{n}")).is_empty())
    });
    let after = Counts::settled(Counts::now);
    let report = common::soak::report(&common::soak::Report {
        secs: start.elapsed().as_secs(),
        servers: soak.configs.len(),
        http: soak.http.len(),
        before,
        baseline,
        last,
        after,
        points: &points,
        ops: {
            let mut ops: Vec<(&'static str, u64)> = soak
                .ops
                .iter()
                .map(|(k, v)| (*k, v.load(Ordering::Relaxed)))
                .collect();
            #[cfg(feature = "fault-injection")]
            ops.push(("panic raised", fleet::RAISED.load(Ordering::SeqCst)));
            ops
        },
    });
    eprintln!("{report}");
    if let Ok(path) = std::env::var("MCP_SOAK_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    if let Some(breach) = soak.breach.lock().take() {
        panic!("the soak stopped: {breach}");
    }
    assert!(gone, "a server process outlived the manager's close");
    assert!(
        after.children == before.children,
        "child processes left: {after} (before: {before})"
    );
    assert!(points.len() >= 2, "no quiet point was reached");
    // Past three deep points (a run of half an hour or more), resident memory must not grow.
    if deep_points.len() > 3 {
        let slope = common::soak::slope_kb_per_min(&deep_points);
        assert!(
            slope <= RSS_SLOPE_KB_PER_MIN,
            "RSS grows by {slope:.1} KiB a minute at the deep quiet points: {deep_points:?}"
        );
    }
}
