//! Stdio servers in the operating-system sandbox, against the kernel: a hostile server of ours
//! tries what a server should not (each attempt refused only if the kernel refuses it), the
//! real `@modelcontextprotocol/server-filesystem` works on what it may and gets its own
//! permission errors on what it may not, a VS Code `mcp.json` with `sandboxEnabled` runs its
//! server confined, and sandbox-runtime (`srt`) is the anchor: what it blocks, ours blocks.
//!
//! Linux only (the sandbox's enforcement here is Landlock, namespaces and seccomp); where the
//! kernel lacks them a developer's run skips, saying so, and CI's fails.
#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use mcp_runtime::transport::{Sandbox, StdioCommand};
use mcp_runtime::{Client, Endpoint, Error};
use serde_json::{json, Value};

use common::npm;

/// Whether the sandbox can run here (else: skipped, or failed in CI).
fn sandbox_here() -> bool {
    let probe = Client::connect(
        "probe",
        &Endpoint::Stdio(StdioCommand {
            sandbox: Some(Sandbox::default()),
            ..StdioCommand::new(common::server_path(), Vec::<String>::new())
        }),
        common::options(),
    );
    match probe {
        Ok(client) => {
            client.close();
            true
        }
        Err(Error::Sandbox { message, .. }) => {
            npm::missing::<()>(&format!("the sandbox cannot run here: {message}"));
            false
        }
        Err(e) => panic!("a sandboxed test server failed to start: {e}"),
    }
}

/// A test's directories: `home` (with a planted `.ssh/id_rsa`), `work` (writable), and a Unix
/// socket listening in `root` (a stand-in for `$SSH_AUTH_SOCK`).
struct Place {
    root: PathBuf,
    _agent: std::os::unix::net::UnixListener,
}

impl Place {
    fn new(name: &str) -> Place {
        let root = common::temp_dir(&format!("sandbox-{name}"));
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::write(root.join("home/.ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(root.join("home/notes.txt"), "readable").unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        let agent = std::os::unix::net::UnixListener::bind(root.join("agent.sock")).unwrap();
        Place {
            root,
            _agent: agent,
        }
    }
    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }
    fn rules(&self, domains: &[&str]) -> Sandbox {
        Sandbox {
            allow_write: vec![self.root.join("work")],
            deny_read: vec![self.root.join("home/.ssh")],
            allowed_domains: domains.iter().map(|d| d.to_string()).collect(),
            ..Sandbox::default()
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A loopback TCP server that greets each connection with `hello`, for the proxy to reach
/// (and for a direct connection to fail to).
fn greeter() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"hello\n");
        }
    });
    port
}

fn attempt(client: &Client, what: Value) -> String {
    let result = client
        .call_tool("attempt", what.clone())
        .unwrap_or_else(|e| panic!("attempt {what}: {e}"));
    result.text()
}

/// The attempts of a hostile server: `(what, whether it must succeed)`.
fn hostile_attempts(place: &Place, port: u16) -> Vec<(Value, bool)> {
    vec![
        (json!({"read": place.path("home/notes.txt")}), true),
        (json!({"write": place.path("work/out.txt")}), true),
        (json!({"read": place.path("home/.ssh/id_rsa")}), false),
        (json!({"write": place.path("home/planted.txt")}), false),
        (
            json!({"write": place.path("home/.ssh/authorized_keys")}),
            false,
        ),
        (json!({"tcp": format!("127.0.0.1:{port}")}), false),
        (json!({"unix": place.path("agent.sock")}), false),
        (
            json!({"sh": format!("cat {} >/dev/null", place.path("home/.ssh/id_rsa"))}),
            false,
        ),
        (
            json!({"sh": format!("echo x > {}", place.path("home/sh.txt"))}),
            false,
        ),
        (
            json!({"sh": format!("echo x > {}", place.path("work/sh.txt"))}),
            true,
        ),
        // A process the server starts, through a shell, is held to the same rules.
        (
            json!({"sh": by_child(json!({"unix": place.path("agent.sock")}))}),
            false,
        ),
        (
            json!({"sh": by_child(json!({"tcp": format!("127.0.0.1:{port}")}))}),
            false,
        ),
        (
            json!({"sh": by_child(json!({"proxy": format!("127.0.0.1:{port}")}))}),
            false,
        ),
        (
            json!({"sh": by_child(json!({"proxy": format!("localhost:{port}")}))}),
            true,
        ),
        (json!({"proxy": format!("localhost:{port}")}), true),
        (json!({"proxy": format!("127.0.0.1:{port}")}), false),
        (json!({"proxy": format!("elsewhere.test:{port}")}), false),
    ]
}

/// A shell command that has a child of the server (the test server in `--attempt` mode) make
/// the attempt `what`.
fn by_child(what: Value) -> String {
    let quoted = what.to_string().replace('\'', "'\\''");
    format!("{} --attempt '{quoted}' >/dev/null", common::server_path())
}

fn sandboxed(place: &Place, rules: Sandbox, extra: &[&str]) -> Client {
    sandboxed_as("hostile", place, rules, extra)
}

fn sandboxed_as(name: &str, place: &Place, rules: Sandbox, extra: &[&str]) -> Client {
    let mut args = vec!["--hostile-start".to_owned()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut command = StdioCommand::new(common::server_path(), args);
    command.env = vec![
        ("HOME".into(), place.path("home")),
        (
            "HOSTILE_START".into(),
            json!([{"read": place.path("home/.ssh/id_rsa")},
                   {"write": place.path("home/at-start.txt")},
                   {"read": place.path("home/notes.txt")}])
            .to_string(),
        ),
    ];
    command.sandbox = Some(rules);
    Client::connect(name, &Endpoint::Stdio(command), common::options())
        .expect("a sandboxed server starts")
}

#[test]
fn the_kernel_refuses_what_the_rules_deny_and_only_that() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("hostile");
    let port = greeter();
    let client = sandboxed(&place, place.rules(&["localhost"]), &[]);
    let start = attempt(&client, json!({}));
    assert!(start.starts_with("refused"), "{start}");
    let at_start = client
        .call_tool("start_attempts", json!({}))
        .unwrap()
        .text();
    let lines: Vec<&str> = at_start.lines().collect();
    assert!(
        lines.len() == 3
            && lines[0].starts_with("refused")
            && lines[1].starts_with("refused")
            && lines[2].starts_with("ok"),
        "at start: {lines:?}"
    );
    for (what, allowed) in hostile_attempts(&place, port) {
        let outcome = attempt(&client, what.clone());
        assert_eq!(
            outcome.starts_with("ok"),
            allowed,
            "{what}: {outcome} (expected {})",
            if allowed { "to succeed" } else { "a refusal" }
        );
    }
    assert!(
        !place.root.join("home/planted.txt").exists() && !place.root.join("home/sh.txt").exists()
    );
    assert_eq!(
        std::fs::read_to_string(place.root.join("work/out.txt")).unwrap(),
        "written by the server"
    );
    // The environment is the default set and the config's: none of ours travels.
    let env = attempt(&client, json!({"sh": "test -z \"$CARGO_MANIFEST_DIR\""}));
    assert!(env.starts_with("ok"), "{env}");
    client.close();
}

#[test]
fn without_allowed_domains_there_is_no_network_and_no_proxy() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("offline");
    let port = greeter();
    let client = sandboxed(&place, place.rules(&[]), &[]);
    for what in [
        json!({"tcp": format!("127.0.0.1:{port}")}),
        json!({"proxy": format!("localhost:{port}")}),
    ] {
        let outcome = attempt(&client, what.clone());
        assert!(outcome.starts_with("refused"), "{what}: {outcome}");
    }
    client.close();
}

#[test]
fn a_closed_sandboxed_server_leaves_no_process_proxy_or_temporary_directory() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("teardown");
    let port = greeter();
    let tag = format!("sandbox-teardown-{}", std::process::id());
    let client = sandboxed_as(
        "teardown",
        &place,
        place.rules(&["localhost"]),
        &["--grandchild", "--tag", &tag],
    );
    // Its private temporary directory: `TMPDIR`, writable, named after the server.
    let prefix = format!("mcp-sandbox-teardown-{}-", std::process::id());
    let temp_dirs = || -> Vec<PathBuf> {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect()
    };
    let dirs = temp_dirs();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let tmp = attempt(
        &client,
        json!({"sh": format!("test \"$TMPDIR\" = '{}' && touch \"$TMPDIR/x\"", dirs[0].display())}),
    );
    assert!(tmp.starts_with("ok"), "{tmp}");
    // A tunnel through the proxy, left open when the server closes.
    let held = attempt(
        &client,
        json!({"proxy": format!("localhost:{port}"), "keep": true}),
    );
    assert!(held.starts_with("ok"), "{held}");
    let pid = client.pid().expect("a stdio server has a pid");
    let watched = common::Watched::new(pid);
    client.close();
    assert!(
        watched.wait_gone(Duration::from_secs(5)),
        "the server is gone"
    );
    assert!(
        common::processes_tagged(&tag).is_empty(),
        "its grandchild is gone"
    );
    let proxy_threads = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim().starts_with("mcp-teardown-pr"))
        })
        .count();
    assert_eq!(proxy_threads, 0, "the proxy's threads ended with it");
    assert!(temp_dirs().is_empty(), "its temporary directory is removed");
}

#[test]
fn a_server_that_cannot_be_sandboxed_does_not_start() {
    let command = StdioCommand {
        sandbox: Some(Sandbox {
            allow_write: vec![PathBuf::from("relative/dir")],
            ..Sandbox::default()
        }),
        ..StdioCommand::new(common::server_path(), Vec::<String>::new())
    };
    match Client::connect("bad", &Endpoint::Stdio(command), common::options()) {
        Err(Error::Sandbox { server, message }) => {
            assert_eq!(server, "bad");
            assert!(
                message.contains("not absolute") || message.contains("lacks"),
                "{message}"
            );
        }
        Err(e) => panic!("expected a sandbox error, got {e}"),
        Ok(_) => panic!("a sandbox with a relative path must not start"),
    }
}

#[test]
fn server_filesystem_works_on_what_it_may_and_the_kernel_refuses_the_rest() {
    if !sandbox_here() || !npm::has_node() {
        if !npm::has_node() {
            npm::missing::<()>("node is not installed");
        }
        return;
    }
    let Some(entry) = npm::install(
        "filesystem",
        &[npm::SERVER_FILESYSTEM],
        "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    ) else {
        return;
    };
    let root = common::temp_dir("sandbox-filesystem");
    let dir = root.join("shared");
    std::fs::create_dir_all(dir.join("writable")).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha").unwrap();
    std::fs::write(dir.join("secret.txt"), "do not read").unwrap();
    // `server-filesystem` is allowed the whole directory: only the kernel refuses inside it.
    let mut command = StdioCommand::new(
        "node",
        [entry.display().to_string(), dir.display().to_string()],
    );
    command.sandbox = Some(Sandbox {
        allow_write: vec![dir.join("writable")],
        deny_read: vec![dir.join("secret.txt")],
        ..Sandbox::default()
    });
    let client = Client::connect("filesystem", &Endpoint::Stdio(command), common::options())
        .expect("server-filesystem starts in the sandbox");
    let call = |tool: &str, args: Value| {
        let r = client.call_tool(tool, args).unwrap();
        (r.is_error == Some(true), r.text())
    };
    let read_tool = if client
        .list_tools()
        .unwrap()
        .iter()
        .any(|t| t.name == "read_text_file")
    {
        "read_text_file"
    } else {
        "read_file"
    };
    let path = |rel: &str| dir.join(rel).display().to_string();
    let (failed, text) = call(read_tool, json!({"path": path("a.txt")}));
    assert!(!failed && text.contains("alpha"), "{text}");
    let (failed, text) = call("list_directory", json!({"path": path("")}));
    assert!(!failed && text.contains("a.txt"), "{text}");
    let (failed, text) = call(
        "write_file",
        json!({"path": path("writable/new.txt"), "content": "made"}),
    );
    assert!(!failed, "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join("writable/new.txt")).unwrap(),
        "made"
    );
    let (failed, text) = call(read_tool, json!({"path": path("secret.txt")}));
    assert!(
        failed && (text.contains("EACCES") || text.contains("ermission denied")),
        "reading the denied file: {text}"
    );
    let (failed, text) = call(
        "write_file",
        json!({"path": path("outside.txt"), "content": "no"}),
    );
    assert!(
        failed && (text.contains("EACCES") || text.contains("ermission denied")),
        "writing outside allowWrite: {text}"
    );
    assert!(!dir.join("outside.txt").exists());
    client.close();
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_vscode_mcp_json_with_sandbox_enabled_runs_its_server_confined() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("vscode");
    let project = place.root.join("project");
    std::fs::create_dir_all(project.join(".vscode")).unwrap();
    std::fs::create_dir_all(project.join("out")).unwrap();
    let config = json!({"sandbox": {"filesystem": {"denyRead": ["${userHome}/.ssh"]}},
    "servers": {"shared": {"type": "stdio", "command": common::server_path(), "sandboxEnabled": true},
    "confined": {
        "type": "stdio",
        "command": common::server_path(),
        "args": ["--hostile-start"],
        "env": {"HOME": place.path("home")},
        "sandboxEnabled": true,
        "sandbox": {
            "filesystem": {"allowWrite": ["${workspaceFolder}/out"], "denyRead": ["${userHome}/.ssh"]},
            "network": {"allowedDomains": ["*.example.com"]}
        }
    }}});
    std::fs::write(project.join(".vscode/mcp.json"), config.to_string()).unwrap();
    let mut manager = mcp_runtime::ManagerOptions::default();
    manager.connect.timeout = Duration::from_secs(20);
    let session = mcp_runtime::create_agent_session(common::project_session(
        &place.root.join("home"),
        &project,
        manager,
    ));
    let manager = session
        .manager()
        .expect("a session with servers has a manager");
    let call = |what: Value| {
        common::call_tool(manager, "confined", "attempt", what)
            .unwrap()
            .text()
    };
    assert!(call(json!({"read": place.path("home/.ssh/id_rsa")})).starts_with("refused"));
    assert!(
        call(json!({"write": project.join("planted").display().to_string()}))
            .starts_with("refused")
    );
    assert!(
        call(json!({"write": project.join("out/made").display().to_string()})).starts_with("ok")
    );
    let rules = manager
        .sandbox("confined")
        .expect("the manager gives the effective rules");
    assert_eq!(rules.deny_read, [place.root.join("home/.ssh")]);
    assert_eq!(rules.allowed_domains, ["*.example.com"]);
    // A server without rules of its own takes the file's top-level `sandbox`.
    let shared = manager.sandbox("shared").expect("the shared rules");
    assert_eq!(shared.deny_read, [place.root.join("home/.ssh")]);
    assert!(shared.allowed_domains.is_empty());
    session.close();
}

/// The pinned sandbox-runtime, the anchor.
const SANDBOX_RUNTIME: &str = "@anthropic-ai/sandbox-runtime@0.0.83";

#[test]
fn what_sandbox_runtime_blocks_ours_blocks() {
    if !sandbox_here() {
        return;
    }
    let (Some(node), true, true) = (npm::node22(), which("bwrap"), which("socat") && which("rg"))
    else {
        npm::missing::<()>("sandbox-runtime needs Node 22, bubblewrap, socat and ripgrep");
        return;
    };
    let Some(cli) = npm::install(
        "sandbox-runtime",
        &[SANDBOX_RUNTIME],
        "node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js",
    ) else {
        return;
    };
    let place = Place::new("anchor");
    let port = greeter();
    let rules = place.rules(&["localhost"]);
    let settings = place.root.join("srt-settings.json");
    std::fs::write(
        &settings,
        json!({
            "network": {"allowedDomains": ["localhost"], "deniedDomains": []},
            "filesystem": {
                "denyRead": [place.path("home/.ssh")],
                "allowWrite": [place.path("work")],
                "denyWrite": []
            }
        })
        .to_string(),
    )
    .unwrap();
    let mut command = StdioCommand::new(
        node.display().to_string(),
        [
            cli.display().to_string(),
            "--settings".to_owned(),
            settings.display().to_string(),
            common::server_path().to_owned(),
        ],
    );
    command.env = vec![("HOME".into(), place.path("home"))];
    let anchor = match Client::connect("anchor", &Endpoint::Stdio(command), common::options()) {
        Ok(client) => client,
        Err(e) => {
            npm::missing::<()>(&format!("sandbox-runtime cannot run here: {e}"));
            return;
        }
    };
    let ours = sandboxed(&place, rules, &[]);
    let mut compared = 0;
    for (what, _) in hostile_attempts(&place, port) {
        let theirs = attempt(&anchor, what.clone());
        let mine = attempt(&ours, what.clone());
        eprintln!("{what}: sandbox-runtime {theirs}; ours {mine}");
        if theirs.starts_with("refused") {
            compared += 1;
            assert!(
                mine.starts_with("refused"),
                "sandbox-runtime refuses {what} ({theirs}) and ours does not ({mine})"
            );
        }
    }
    assert!(
        compared >= 5,
        "sandbox-runtime refused only {compared} attempts"
    );
    anchor.close();
    ours.close();
}

fn which(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_command_line_runs_a_server_sandboxed_and_status_shows_its_rules() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("cli");
    let secret = place.path("home/.ssh/id_rsa");
    let run = |args: &[&str]| {
        let mut cmd = common::cli(&place.root.join("home"));
        cmd.current_dir(&place.root)
            .args(args)
            .args(["--deny-read", "home/.ssh", "--allow-write", "work", "--"])
            .args([common::server_path(), "--hostile-start"]);
        cmd.output().unwrap()
    };
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let read = run(&["call", "attempt", &format!("read={secret}")]);
    assert!(text(&read).contains("refused"), "{}", text(&read));
    let write = run(&[
        "call",
        "attempt",
        &format!("write={}", place.path("work/cli.txt")),
    ]);
    assert!(text(&write).contains("ok: wrote"), "{}", text(&write));
    let status = run(&["--json", "status"]);
    let rows: Value = serde_json::from_str(&text(&status)).unwrap();
    assert_eq!(
        rows[0]["sandbox"]["denyRead"],
        json!([place.path("home/.ssh")]),
        "{rows}"
    );
    assert_eq!(
        rows[0]["sandbox"]["allowWrite"],
        json!([place.path("work")])
    );
    let url = common::cli(&place.root.join("home"))
        .args(["tools", "--sandbox", "--url", "http://127.0.0.1:1/mcp"])
        .output()
        .unwrap();
    assert_eq!(url.status.code(), Some(2), "a URL cannot be sandboxed");
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_panic_in_the_proxy_ends_the_servers_connection_with_an_internal_error() {
    if !sandbox_here() {
        return;
    }
    let place = Place::new("proxy-panic");
    let port = greeter();
    // The first proxied connection's thread panics: the server's connection ends with the
    // typed error, and the server is stopped.
    let fired = std::sync::atomic::AtomicBool::new(false);
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen_in_hook = std::sync::Arc::clone(&seen);
    let _faults = mcp_runtime::faults::inject(move |at| {
        // The acceptor passes the boundary first, then each connection's thread.
        if at == mcp_runtime::faults::SANDBOX_PROXY
            && seen_in_hook.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1
            && !fired.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            panic!("injected at {at}");
        }
    });
    let client = sandboxed_as("proxy-panic", &place, place.rules(&["localhost"]), &[]);
    let pid = client.pid().expect("a pid");
    let watched = common::Watched::new(pid);
    // The call may see its tunnel closed or the connection end: either way it ends.
    let _ = client.call_tool("attempt", json!({"proxy": format!("localhost:{port}")}));
    common::eventually("the connection ends", Duration::from_secs(20), || {
        client.closed_reason().is_some()
    });
    match client.closed_reason() {
        Some(Error::Internal { place, message }) => {
            assert!(place.contains("sandbox"), "{place}: {message}");
            assert!(message.contains("injected"), "{message}");
        }
        other => panic!("expected the proxy's panic, got {other:?}"),
    }
    assert!(
        watched.wait_gone(Duration::from_secs(10)),
        "the server is stopped"
    );
}
