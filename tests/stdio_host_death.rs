//! A host killed outright leaves no server behind (Linux): every server process group it started
//! is killed within about a second of its death, grandchildren included, however it died.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{is_alive, server_path, wait_gone};

/// Starts the test host with `servers` stubborn servers; returns it and every server and
/// grandchild pid, once they all run.
fn start_host(servers: usize) -> (std::process::Child, Vec<u32>) {
    let mut host = Command::new(common::example_path("mcp-test-host"))
        .args([server_path(), &servers.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the test host");
    let mut pids = Vec::new();
    // The host prints its lines within its 20 s connect timeout, or exits (and stdout ends).
    let stdout = BufReader::new(host.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.expect("read the host's stdout");
        if line == "ready" {
            break;
        }
        pids.extend(line.split(' ').map(|p| p.parse::<u32>().expect("a pid")));
    }
    assert_eq!(
        pids.len(),
        2 * servers,
        "the host did not report {servers} servers"
    );
    (host, pids)
}

fn killed_host_leaves_nothing(signal: libc::c_int) {
    let (mut host, pids) = start_host(2);
    // The thread that spawned them has ended: they still run.
    for pid in &pids {
        assert!(is_alive(*pid), "{pid} died with the connect thread");
    }
    // SAFETY: signalling the host process this test started.
    assert_eq!(unsafe { libc::kill(host.id() as libc::pid_t, signal) }, 0);
    // Bounded: a host that outlives the signal fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = host.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = host.kill();
            let _ = host.wait();
            for pid in &pids {
                // SAFETY: cleaning up the processes of the failed test.
                unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
            }
            panic!("the host outlived signal {signal}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(signal), "{status}");
    let left: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|pid| !wait_gone(*pid, Duration::from_secs(5)))
        .collect();
    if !left.is_empty() {
        for pid in &left {
            // SAFETY: cleaning up the processes the failed test left behind.
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        panic!("processes outlived their host: {left:?}");
    }
}

#[test]
fn a_host_killed_by_sigkill_leaves_no_server() {
    killed_host_leaves_nothing(libc::SIGKILL);
}

#[test]
fn a_host_killed_by_sigterm_leaves_no_server() {
    killed_host_leaves_nothing(libc::SIGTERM);
}

#[test]
fn a_host_killed_by_sigint_leaves_no_server() {
    killed_host_leaves_nothing(libc::SIGINT);
}
