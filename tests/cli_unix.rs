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
/// whatever the timing. Close-on-exec: a process another test starts meanwhile must not keep a
/// copy of the read end (it did, now and then, and the command's writes then succeeded).
fn closed_pipe() -> Stdio {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two new descriptors, each then owned exactly once.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
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

fn mcp_out(args: &[&str]) -> Output {
    let home = home("help");
    common::cli(&home).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn help_for_the_tool_and_for_each_command_and_the_version() {
    let full = mcp_out(&["help"]);
    assert!(full.status.success());
    assert!(text(&full).contains("Commands:"), "{}", text(&full));
    assert_eq!(text(&full), text(&mcp_out(&["--help"])));
    for (a, b) in [
        (vec!["help", "call"], vec!["call", "--help"]),
        (vec!["help", "probe"], vec!["probe", "-h"]),
    ] {
        let (x, y) = (mcp_out(&a), mcp_out(&b));
        assert!(x.status.success() && y.status.success(), "{a:?} {b:?}");
        assert_eq!(text(&x), text(&y));
        assert!(
            text(&x).contains(&format!("Usage: mcp {} [OPTIONS]", a[1])),
            "{}",
            text(&x)
        );
        assert!(!text(&x).contains("Commands:"), "one command's help only");
    }
    for flag in ["-V", "--version"] {
        let out = mcp_out(&[flag]);
        assert_eq!(text(&out), format!("mcp {}\n", env!("CARGO_PKG_VERSION")));
    }
    let miss = mcp_out(&["help", "tols"]);
    assert_eq!(miss.status.code(), Some(2));
    let err = String::from_utf8_lossy(&miss.stderr);
    assert!(
        err.contains("a similar subcommand exists: 'tools'"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Runs a shell's syntax check (`-n`; elvish's `-compileonly`) on `script`; `None` (said) where
/// the shell is missing. A script for elvish sets the line editor's completer, which a shell
/// that is not interactive does not have: a variable of the script's own stands in for it.
fn syntax_check(dir: &std::path::Path, shell: &str, script: &str) -> Option<Output> {
    let path = dir.join(format!("mcp.{shell}"));
    let script = if shell == "elvish" {
        assert!(script.contains("set edit:completion:arg-completer[mcp] = "));
        format!(
            "var arg-completer = [&]\n{}",
            script.replace("edit:completion:arg-completer", "arg-completer")
        )
    } else {
        script.to_owned()
    };
    std::fs::write(&path, script).unwrap();
    let check = if shell == "elvish" {
        "-compileonly"
    } else {
        "-n"
    };
    match Command::new(shell).arg(check).arg(&path).output() {
        Ok(out) => Some(out),
        Err(_) => common::npm::missing(&format!(
            "{shell} is not installed; its completion script was not checked"
        )),
    }
}

#[test]
fn completion_scripts_parse_in_their_shells_and_complete_commands_and_options() {
    let dir = home("completions");
    for shell in ["bash", "zsh", "fish", "elvish"] {
        let out = mcp_out(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = text(&out);
        let config = if shell == "fish" {
            "-l config"
        } else {
            "--config"
        };
        for word in ["tools", "call", "probe", config] {
            assert!(script.contains(word), "{shell}: {word}");
        }
        if let Some(check) = syntax_check(&dir, shell, &script) {
            assert!(
                check.status.success(),
                "{shell}: {}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    // bash, for real: the function completes a command and an option, called as bash calls
    // it (the command, the word, the word before).
    let script = dir.join("mcp.bash");
    let probe = format!(
        "source {}; COMP_WORDS=(mcp to); COMP_CWORD=1; _mcp mcp to mcp; echo \"${{COMPREPLY[@]}}\"; COMP_WORDS=(mcp --con); COMP_CWORD=1; _mcp mcp --con mcp; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash").arg("-c").arg(probe).output().unwrap();
    assert_eq!(text(&out), "tools\n--config\n");
    // PowerShell (not on this machine to run it): the script registers the completer and
    // knows the commands and options.
    let out = mcp_out(&["completions", "powershell"]);
    assert!(out.status.success());
    let script = text(&out);
    for word in ["Register-ArgumentCompleter", "'tools'", "'--config'"] {
        assert!(script.contains(word), "powershell: {word}");
    }
    let bad = mcp_out(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn input_that_leaves_nothing_to_do_is_an_error_that_says_what_was_expected() {
    let home = home("nothing");
    let file = |name: &str, text: &str| {
        let path = home.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let empty = file("empty.json", "{}");
    let array = file("array.json", "[1, 2]");
    let bad = file("bad.json", r#"{"mcpServers": {"x": {"command": 42}}}"#);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--config".into(),
                empty.display().to_string(),
                "tools".into(),
            ],
            "no servers in it: expected {\"mcpServers\"",
        ),
        (
            vec![
                "--config".into(),
                array.display().to_string(),
                "tools".into(),
            ],
            "not a JSON object",
        ),
        (
            vec!["--config".into(), bad.display().to_string(), "tools".into()],
            "no usable server (x: ",
        ),
        (
            vec![
                "--cwd".into(),
                "/nonexistent-mcp-dir".into(),
                "tools".into(),
            ],
            "--cwd /nonexistent-mcp-dir: no such directory",
        ),
        (
            vec!["--cwd".into(), home.display().to_string(), "status".into()],
            "no MCP server is configured here",
        ),
    ];
    for (args, expected) in cases {
        let out = common::cli(&home).args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // VS Code's shape is a config like any other.
    let vscode = file(
        "vscode.json",
        &json!({"servers": {"v": {"type": "stdio", "command": common::server_path()}}}).to_string(),
    );
    let out = common::cli(&home)
        .arg("--config")
        .arg(&vscode)
        .args(["call", "mcp_v_echo", "message=vs"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(text(&out), "vs\n");
}

#[test]
fn a_calls_failure_is_told_apart_from_the_tools_own_error() {
    let home = home("failures");
    let tag = format!("cli-unix-failures-{}", std::process::id());
    let cfg = config(&home, &tag);
    let call = |extra: &[&str]| {
        let mut cmd = common::cli(&home);
        cmd.arg("--config").arg(&cfg).args(extra);
        cmd.output().unwrap()
    };
    // The tool's own name, with one server.
    let out = call(&["call", "echo", "message=own name"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(text(&out), "own name\n");
    // A client-side timeout: status 124, and with --json an error object, not a tool result.
    let out = call(&["--timeout", "300", "--json", "call", "mcp_t_hang"]);
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["error"]["kind"], "timeout", "{shown}");
    assert!(shown.get("isError").is_none(), "{shown}");
    assert!(
        stderr(&out).contains("timeout after 300ms"),
        "{}",
        stderr(&out)
    );
    // A server that dies in the call: unavailable (69), said on stderr only.
    let out = call(&["call", "mcp_t_crash"]);
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    // A server that cannot start: unavailable too.
    let broken = home.join("broken.json");
    std::fs::write(
        &broken,
        json!({"mcpServers": {"b": {"command": "/nonexistent/mcp-server"}}}).to_string(),
    )
    .unwrap();
    let out = common::cli(&home)
        .arg("--config")
        .arg(&broken)
        .args(["call", "mcp_b_x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(common::processes_tagged(&tag).is_empty());
}

#[test]
fn an_interrupted_call_exits_130_without_a_transport_error() {
    let home = home("interrupt");
    let tag = format!("cli-unix-interrupt-{}", std::process::id());
    let cfg = config(&home, &tag);
    let mut child = common::cli(&home)
        .arg("--config")
        .arg(&cfg)
        .args(["-vv", "call", "mcp_t_hang"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The call arrived (the server says so on its stderr, which the CLI logs at debug).
    let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the CLI connected");
        let connected = line.contains("hang: the call arrived");
        seen.push(line);
        if connected {
            break;
        }
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    seen.extend(rx.try_iter());
    let errors: Vec<&String> = seen.iter().filter(|l| l.starts_with("mcp: ")).collect();
    assert_eq!(out.status.code(), Some(130), "{seen:?}");
    assert!(
        errors.is_empty(),
        "an interrupt is no error to report: {errors:?}"
    );
    assert!(out.stdout.is_empty());
    assert!(common::processes_tagged(&tag).is_empty());
}

#[test]
fn a_server_on_the_command_line_serves_every_command() {
    let home = home("target");
    let tag = format!("cli-unix-target-{}", std::process::id());
    let server = [common::server_path(), "--tag", tag.as_str()];
    let mcp = |args: &[&str]| {
        let mut cmd = common::cli(&home);
        cmd.args(args).arg("--").args(server);
        cmd.output().unwrap()
    };
    let tools = mcp(&["--json", "tools"]);
    assert!(tools.status.success(), "{}", stderr(&tools));
    let listed: serde_json::Value = serde_json::from_slice(&tools.stdout).unwrap();
    assert!(listed
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "mcp_mcp_test_server_echo"));
    let out = mcp(&["call", "echo", "message=from argv"]);
    assert_eq!(text(&out), "from argv\n", "{}", stderr(&out));
    let out = mcp(&["--env", "MCP_TEST_VALUE=42", "status"]);
    assert!(
        text(&out).contains("mcp-test-server  connected"),
        "{}",
        text(&out)
    );
    let out = mcp(&["info"]);
    assert!(
        text(&out).contains("server:       mcp-test-server"),
        "{}",
        text(&out)
    );
    assert!(common::processes_tagged(&tag).is_empty());
    // Over HTTP, with a header.
    let http = common::http_server::TestHttp::start(common::http_server::Behaviour::default());
    let out = common::cli(&home)
        .args([
            "--url",
            &http.url(),
            "--header",
            "X-Test: yes",
            "call",
            "echo",
            "message=over http",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(http
        .seen()
        .iter()
        .any(|r| r.header("x-test") == Some("yes")));
    // Given with a config, or to a command that starts nothing: a usage error.
    for args in [vec!["--config", "x.json", "tools"], vec!["servers"]] {
        let out = mcp(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_discovery_warning_is_printed_once_and_login_and_logout_word_a_miss_alike() {
    let home = home("warnings");
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join(".mcp.json"), "{not json").unwrap();
    let out = common::cli(&home)
        .arg("--cwd")
        .arg(&project)
        .arg("servers")
        .output()
        .unwrap();
    assert_eq!(
        stderr(&out).matches("malformed JSON").count(),
        1,
        "{}",
        stderr(&out)
    );
    let miss = |command: &str| {
        let out = common::cli(&home)
            .arg("--cwd")
            .arg(&home)
            .args([command, "nobody"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        stderr(&out)
    };
    let (login, logout) = (miss("login"), miss("logout"));
    assert!(
        login.contains("no configured server is named \"nobody\""),
        "{login}"
    );
    assert_eq!(login, logout);
}

#[test]
fn status_columns_stay_aligned_with_long_names_and_states() {
    let home = home("status-columns");
    let path = home.join("mcp.json");
    let long = "a-server-with-a-name-longer-than-any-column";
    let servers = json!({"mcpServers": {
        long: {"command": common::server_path()},
        "b": {"command": "/nonexistent/server"}
    }});
    std::fs::write(&path, servers.to_string()).unwrap();
    let out = common::cli(&home)
        .args(["--no-cache", "--config", path.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    let said = text(&out);
    let rows: Vec<&str> = said.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(rows.len(), 2, "{said}");
    let column = |row: &str, word: &str| row.find(word).unwrap_or_else(|| panic!("{said}"));
    assert_eq!(
        column(rows[0], "connected"),
        column(rows[1], "disconnected"),
        "{said}"
    );
    assert_eq!(column(rows[0], "stdio"), column(rows[1], "stdio"), "{said}");
}
