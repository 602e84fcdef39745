//! The `mcp` CLI tells the truth and leaves nothing changed or running: signals close every
//! server, `tools` fails when every server did, `status` shows real outcomes, `--config`
//! sessions never edit config files, and `probe` neither destroys nor writes where it runs.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The example binary, with its own home and cache directory under `root`.
fn mcp(root: &Path) -> Command {
    common::cli(&root.join("home"))
}

fn config(root: &Path, servers: Value) -> PathBuf {
    let path = root.join("servers.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

fn server(args: &[&str]) -> Value {
    json!({"command": common::server_path(), "args": args})
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits (bounded) for the child to exit; kills it and fails when it does not.
fn wait_exit(mut child: Child, bound: Duration) -> Output {
    let deadline = Instant::now() + bound;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the CLI did not exit within {bound:?}");
        }
        // The pid of a child: its pidfd would do, but a short poll is enough for a test bound.
        common::wait_gone(child.id(), Duration::from_millis(50));
    }
}

fn wait_for_tagged(tag: &str) -> u32 {
    common::eventually("the server started", Duration::from_secs(20), || {
        !common::processes_tagged(tag).is_empty()
    });
    common::processes_tagged(tag)[0]
}

/// The signals blocked in a process, from /proc (`None` once it is gone).
fn blocked_signals(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("SigBlk:"))?;
    u64::from_str_radix(line["SigBlk:".len()..].trim(), 16).ok()
}

#[test]
fn sigint_sigterm_and_sighup_close_every_server_and_exit_128_plus_the_signal() {
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let root = common::temp_dir(&format!("cli-signal-{sig}"));
        let tag = format!("cli-signal-{}-{sig}", std::process::id());
        // The server outlives its stdin: only the CLI's teardown (SIGTERM to its group) ends it.
        let cfg = config(
            &root,
            json!({"t": server(&["--tag", &tag, "--ignore-stdin-eof"])}),
        );
        let child = mcp(&root)
            .args(["--no-cache", "--config", cfg.to_str().unwrap()])
            .args(["call", "mcp_t_hang"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let server = wait_for_tagged(&tag);
        let watched = common::Watched::new(server);
        // Caught in the instant of its spawn, a process can still show the spawning thread's
        // all-blocked mask; a server that inherited a mask keeps it.
        let unblocked = common::holds_within(Duration::from_secs(10), || {
            blocked_signals(server) == Some(0)
        });
        assert!(
            unblocked,
            "the server does not inherit the CLI's blocked signals: {:?}",
            blocked_signals(server)
        );
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let out = wait_exit(child, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        assert!(
            watched.wait_gone(Duration::from_secs(10)),
            "signal {sig}: the server outlived the CLI"
        );
        let _ = std::fs::remove_dir_all(root);
    }
}

#[test]
fn tools_exits_69_when_every_server_failed_and_names_the_failures() {
    let root = common::temp_dir("cli-tools-failed");
    let broken = server(&["--exit-on-initialize", "4"]);
    let cfg = config(&root, json!({"a": broken, "b": broken}));
    let out = mcp(&root)
        .args(["--no-cache", "--config", cfg.to_str().unwrap(), "tools"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(69),
        "every server failed: unavailable"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("mcp:a via") && err.contains("mcp:b via"),
        "{err}"
    );

    // One of two failing is not a failure of the command, but it is named.
    let cfg = config(&root, json!({"a": server(&[]), "b": broken}));
    let out = mcp(&root)
        .args(["--no-cache", "--config", cfg.to_str().unwrap(), "tools"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("mcp:b via") && !err.contains("mcp:a via"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(root);
}

/// A server whose tools are cached (one run filled the cache) and which is held at
/// `initialize` in the next run: that run's gate passes with deferred tools.
struct WarmHeld {
    root: PathBuf,
    cfg: PathBuf,
    hold: common::Hold,
}

impl WarmHeld {
    fn new(name: &str) -> WarmHeld {
        let root = common::temp_dir(name);
        let hold = common::Hold::new();
        let cfg = config(&root, json!({"s": server(&["--hold-port", &hold.port()])}));
        let warm = WarmHeld { root, cfg, hold };
        let mut warming = warm
            .cli()
            .arg("tools")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        warm.hold.wait().release();
        assert!(warming.wait().unwrap().success());
        warm
    }

    fn cli(&self) -> Command {
        let mut cmd = mcp(&self.root);
        cmd.arg("--cache-dir")
            .arg(self.root.join("cache"))
            .arg("--config")
            .arg(&self.cfg);
        cmd
    }

    /// Starts `args` (logging at debug), lets `before` feed its stdin, and releases the held
    /// server once the CLI says it waits for outcomes (or once it has ended without).
    fn run_released(&self, args: &[&str], before: &[u8], after: &[u8]) -> Output {
        let mut child = self
            .cli()
            .env("RUST_LOG", "mcp=debug")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let held = self.hold.wait();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(before).unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                if line.contains("waiting for the outcome") {
                    let _ = tx.send(());
                }
            }
        });
        let _ = rx.recv_timeout(Duration::from_secs(20));
        held.release();
        stdin.write_all(after).unwrap();
        drop(stdin);
        wait_exit(child, Duration::from_secs(30))
    }
}

impl Drop for WarmHeld {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn status_waits_for_a_server_still_connecting_behind_a_warm_cache() {
    let warm = WarmHeld::new("cli-status");
    let out = warm.run_released(&["--json", "status"], b"", b"");
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "connected", "{rows:?}");
}

#[test]
fn the_repls_status_waits_as_status_does_and_its_call_takes_key_value_words() {
    let warm = WarmHeld::new("cli-repl-status");
    let out = warm.run_released(
        &["repl"],
        b"/mcp status\n",
        b"status\ncall mcp_s_echo message=\"two words\"\nquit\n",
    );
    let said = text(&out.stdout);
    assert!(
        said.starts_with("s: connected (17 tools)\n\ns: connected (17 tools)\n\n"),
        "/mcp status and status agree with `mcp status`: {said}"
    );
    assert!(said.contains("\n\ntwo words\n\n"), "{said}");
}

#[test]
fn a_config_session_never_edits_config_files() {
    let root = common::temp_dir("cli-config-edits");
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let cfg = config(&root, json!({"t": server(&[])}));
    let before = std::fs::read(&cfg).unwrap();
    let mut child = mcp(&root)
        .args(["--no-cache", "--config", cfg.to_str().unwrap()])
        .args(["--cwd", project.to_str().unwrap(), "repl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let script = "/mcp disable t\n/mcp enable t\n/mcp add x --url http://127.0.0.1:9/mcp\n\
                  /mcp remove t\n/mcp status\n";
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    drop(child.stdin.take());
    let out = wait_exit(child, Duration::from_secs(60));
    let answer = text(&out.stdout);
    assert_eq!(
        answer
            .matches("Refused: this session uses --config")
            .count(),
        4,
        "{answer}"
    );
    assert!(answer.contains("t: connected (17 tools)"), "{answer}");
    assert!(
        !root.join("home/.mcp-runtime").exists(),
        "the user's own config was written"
    );
    assert!(
        !project.join(".mcp-runtime").exists(),
        "the project's config was written"
    );
    assert_eq!(std::fs::read(&cfg).unwrap(), before);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_help_states_the_real_default_timeouts() {
    let root = common::temp_dir("cli-help");
    let out = mcp(&root).arg("--help").output().unwrap();
    let help = text(&out.stdout);
    let defaults = mcp_runtime::ConnectOptions::default();
    assert!(
        help.contains(&format!("{} to connect", defaults.timeout.as_millis()))
            && help.contains(&format!(
                "{} per request",
                defaults.request_timeout.as_millis()
            )),
        "{help}"
    );
    let _ = std::fs::remove_dir_all(root);
}

fn probe(root: &Path, cwd: &Path, extra: &[&str]) -> (Value, PathBuf) {
    let log = root.join("written.log");
    let out = mcp(root)
        .current_dir(cwd)
        .arg("--json")
        .arg("probe")
        .args(extra)
        .args(["--", common::server_path(), "--filesystem"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    (serde_json::from_slice(&out.stdout).unwrap(), log)
}

#[test]
fn probe_skips_destructive_tools_unless_asked() {
    let root = common::temp_dir("cli-probe-skip");
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let (report, log) = probe(&root, &cwd, &[]);
    let calls = report["calls"].as_array().unwrap();
    assert!(
        calls.contains(&json!({"tool": "write_file", "skipped": "destructive"})),
        "{calls:?}"
    );
    assert!(
        calls.contains(&json!({"tool": "create_directory", "skipped": "writes"})),
        "{calls:?}"
    );
    // Arguments of the declared types, unions and nested objects included.
    assert!(
        calls
            .contains(&json!({"tool": "typed_union", "ok": true, "isError": false, "error": null})),
        "{calls:?}"
    );
    assert!(calls.contains(&json!({"tool": "echo", "ok": true, "isError": false, "error": null})));
    assert!(!log.exists(), "the destructive tool was called");
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);

    // The text report says so too.
    let out = mcp(&root)
        .current_dir(&cwd)
        .args(["probe", "--", common::server_path(), "--filesystem"])
        .arg(&log)
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert!(
        report
            .lines()
            .any(|l| l.contains("write_file") && l.contains("skipped")),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn probe_roots_are_an_empty_temporary_directory_removed_afterwards() {
    let root = common::temp_dir("cli-probe-roots");
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let (report, log) = probe(&root, &cwd, &["--call-all"]);
    let calls = report["calls"].as_array().unwrap();
    let write = calls.iter().find(|c| c["tool"] == "write_file").unwrap();
    assert_eq!(write["ok"], true, "{write}");
    assert_eq!(write["isError"], false, "{write}");
    let written = PathBuf::from(std::fs::read_to_string(&log).unwrap().trim());
    assert_eq!(written.file_name().unwrap(), "test");
    assert!(!written.starts_with(&cwd), "{}", written.display());
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing was written where the probe ran"
    );
    assert!(
        !written.parent().unwrap().exists(),
        "the probe's root {} is removed",
        written.parent().unwrap().display()
    );
    let _ = std::fs::remove_dir_all(root);
}
