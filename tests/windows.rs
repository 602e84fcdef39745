//! Windows: servers started the way Windows users start them, and nothing left behind.
//!
//! Built for `x86_64-pc-windows-gnu` and run under Wine by `.ci/run` (see *Windows* in
//! docs/transport.md); Wine is not Windows, so a real Windows machine remains the judge. On other
//! systems this file is empty.
//!
//! - A config says `srv`, as users write `npx`: the server is a `.cmd` shim on `PATH`, found
//!   through `PATHEXT` and run through `cmd.exe` (arguments with spaces and quotes intact).
//! - `close` ends the server and the helper process it started (its Job Object).
//! - A host killed outright (`TerminateProcess`) takes its servers and their helpers with it:
//!   the system closes its handle to each server's job, which kills the job.
//! - The `mcp` command calls a tool of such a server from a config file.
//! - The `mcp` command's demo runs every step (its checks do not depend on the machine's
//!   speed: under Wine the fast server too can miss the startup gate).
#![cfg(windows)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_runtime::transport::StdioCommand;
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::json;

/// A program of this package built beside the tests: an example (the test servers and host)
/// or, with `bin`, the `mcp` command.
fn built(name: &str, bin: bool) -> PathBuf {
    let deps = std::env::current_exe().unwrap();
    let debug = deps.parent().unwrap().parent().unwrap();
    let dir = if bin {
        debug.to_path_buf()
    } else {
        debug.join("examples")
    };
    let path = dir.join(format!("{name}.exe"));
    assert!(path.exists(), "{} is missing", path.display());
    path
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-windows-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `dir\srv.cmd`, a shim like the ones npm installs (`npx.cmd`): it runs the test
/// server with the arguments it was given.
fn shim(dir: &Path) {
    let server = built("mcp-test-server", false);
    std::fs::write(
        dir.join("srv.cmd"),
        format!("@echo off\r\n\"{}\" %*\r\n", server.display()),
    )
    .unwrap();
}

/// Whether process `pid` is still running.
fn is_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // SAFETY: opening a process by id for a query; the handle is closed below.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        return false;
    }
    let mut code = 0u32;
    // SAFETY: a valid process handle and a place for its exit code.
    let ok = unsafe { GetExitCodeProcess(handle, &mut code) } != 0;
    // SAFETY: the handle opened above.
    unsafe { CloseHandle(handle) };
    ok && code == STILL_ACTIVE as u32
}

/// Waits until every pid is gone, at most `bound`; the ones still running.
fn left_after(pids: &[u32], bound: Duration) -> Vec<u32> {
    let deadline = Instant::now() + bound;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| is_alive(*p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's pid and its helper's.
fn pids(client: &Client) -> Vec<u32> {
    let helper = client
        .call_tool("grandchild_pid", json!({}))
        .expect("the helper's pid")
        .text();
    vec![
        client.pid().expect("a stdio server has a pid"),
        helper.trim().parse().expect("a pid"),
    ]
}

#[test]
fn a_cmd_shim_is_found_through_pathext_and_keeps_its_arguments() {
    let dir = scratch("shim");
    shim(&dir);
    let mut command = StdioCommand::new("srv", ["--tag", "two words \"quoted\""]);
    // The server's own PATH, as a config's `env` may set it (the name in any case).
    command
        .env
        .push(("Path".to_owned(), dir.display().to_string()));
    let client = Client::connect("shim", &Endpoint::Stdio(command), ConnectOptions::default())
        .expect("the shim starts the server");
    let echoed = client
        .call_tool("echo", json!({"message": "hello from Windows"}))
        .expect("echo")
        .text();
    assert_eq!(echoed, "hello from Windows");
    let argv = client.call_tool("argv", json!({})).expect("argv").text();
    assert_eq!(argv, json!(["--tag", "two words \"quoted\""]).to_string());
    let pid = client.pid().unwrap();
    client.close();
    assert!(left_after(&[pid], Duration::from_secs(5)).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn close_ends_the_server_and_the_process_it_started() {
    let endpoint = Endpoint::stdio(
        built("mcp-test-server", false).display().to_string(),
        ["--ignore-stdin-eof", "--grandchild"],
    );
    let client = Client::connect("tree", &endpoint, ConnectOptions::default()).unwrap();
    let pids = pids(&client);
    assert!(pids.iter().all(|p| is_alive(*p)), "{pids:?} not running");
    client.close();
    // `close` returns once the job is empty.
    let left: Vec<u32> = pids.iter().copied().filter(|p| is_alive(*p)).collect();
    assert!(left.is_empty(), "outlived close: {left:?}");
}

#[test]
fn a_host_killed_outright_takes_its_servers_with_it() {
    use std::io::{BufRead, BufReader};
    let mut host = Command::new(built("mcp-test-host", false))
        .args([
            built("mcp-test-server", false).display().to_string(),
            "2".into(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the test host");
    let mut pids = Vec::new();
    for line in BufReader::new(host.stdout.take().unwrap()).lines() {
        let line = line.expect("read the host's stdout");
        if line == "ready" {
            break;
        }
        pids.extend(line.split(' ').map(|p| p.parse::<u32>().expect("a pid")));
    }
    assert_eq!(pids.len(), 4, "the host did not report its 2 servers");
    assert!(pids.iter().all(|p| is_alive(*p)), "{pids:?} not running");
    host.kill().expect("TerminateProcess the host");
    host.wait().unwrap();
    let left = left_after(&pids, Duration::from_secs(10));
    if !left.is_empty() {
        for pid in &left {
            let _ = Command::new("taskkill")
                .args(["/F", "/PID", &pid.to_string()])
                .output();
        }
        panic!("processes outlived their host: {left:?}");
    }
}

#[test]
fn the_command_calls_a_tool_of_a_server_configured_as_windows_users_write_it() {
    let dir = scratch("cli");
    shim(&dir);
    let config = dir.join("mcp.json");
    std::fs::write(
        &config,
        r#"{ "mcpServers": { "srv": { "command": "srv", "args": [] } } }"#,
    )
    .unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let out = Command::new(built("mcp", true))
        .arg("--config")
        .arg(&config)
        .args(["--no-cache", "--no-project-config", "--cwd"])
        .arg(&dir)
        .args(["call", "mcp_srv_echo", "message=from the command"])
        .env("PATH", format!("{};{path}", dir.display()))
        .env("USERPROFILE", &dir)
        .env("APPDATA", dir.join("AppData"))
        .stdin(Stdio::null())
        .output()
        .expect("run mcp.exe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("from the command"),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_demo_runs_every_step() {
    let out = Command::new(built("mcp", true))
        .stdin(Stdio::null())
        .output()
        .expect("run mcp.exe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("demo finished: every step worked"),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
