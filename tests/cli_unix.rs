//! The `mcp` CLI as a Unix tool: what happens when its output cannot be written.

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::json;

fn home(name: &str) -> PathBuf {
    common::temp_dir(&format!("cli-unix-{name}"))
}

/// A config with one test server, tagged so its process can be looked for afterwards.
fn config(home: &std::path::Path, tag: &str) -> PathBuf {
    let path = home.join("mcp.json");
    let servers =
        json!({"mcpServers": {"t": {"command": common::server_path(), "args": ["--tag", tag]}}});
    std::fs::write(&path, servers.to_string()).unwrap();
    path
}

/// The write end of a pipe whose read end is already closed: the first write fails with EPIPE,
/// whatever the timing.
fn closed_pipe() -> Stdio {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe fills two new descriptors, each then owned exactly once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    Stdio::from(unsafe { OwnedFd::from_raw_fd(fds[1]) })
}

fn run(mut cmd: Command, stdout: Stdio) -> Output {
    cmd.stdout(stdout).stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly_and_closes_the_servers() {
    let home = home("pipe");
    let tag = format!("cli-unix-pipe-{}", std::process::id());
    let cfg = config(&home, &tag);
    for args in [
        vec!["servers"],
        vec!["--json", "servers"],
        vec!["tools"],
        vec!["--json", "tools"],
        vec!["status"],
        vec!["call", "mcp_t_echo", "message=hi"],
        vec!["--version"],
        vec!["--help"],
    ] {
        let mut cmd = common::cli(&home);
        cmd.arg("--config").arg(&cfg).args(&args);
        let out = run(cmd, closed_pipe());
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(
            common::processes_tagged(&tag).is_empty(),
            "{args:?}: a server outlived the command"
        );
    }
}

#[test]
fn a_full_disk_is_one_line_on_stderr_and_status_74() {
    let home = home("full");
    let tag = format!("cli-unix-full-{}", std::process::id());
    let cfg = config(&home, &tag);
    for args in [vec!["servers"], vec!["--json", "tools"]] {
        let mut cmd = common::cli(&home);
        cmd.arg("--config").arg(&cfg).args(&args);
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = run(cmd, Stdio::from(full));
        assert_eq!(out.status.code(), Some(74), "{args:?}: {}", stderr(&out));
        let text = stderr(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {text}");
        assert!(
            lines[0].starts_with("mcp: cannot write the output: "),
            "{args:?}: {text}"
        );
        assert!(common::processes_tagged(&tag).is_empty(), "{args:?}");
    }
}
