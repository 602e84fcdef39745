//! Config files that are not files: a symlink to a device, a FIFO, a file far too large. Each
//! one is refused at once with one warning, and every other source still loads.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_runtime::config::{load_all_mcp_configs, DiscoveryOptions, LoadedConfigs};

/// What to put where a config file is expected.
#[derive(Debug, Clone, Copy)]
enum Hostile {
    Symlink(&'static str),
    Fifo,
    /// A sparse regular file of this many bytes (no disk used).
    Oversized(u64),
}

fn make(path: &Path, what: Hostile) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match what {
        Hostile::Symlink(target) => std::os::unix::fs::symlink(target, path).unwrap(),
        Hostile::Fifo => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path and a mode.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        }
        Hostile::Oversized(len) => {
            let f = std::fs::File::create(path).unwrap();
            f.set_len(len).unwrap();
        }
    }
}

struct Fixture {
    root: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("mcp-hostile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let good = root.join("home/.cursor/mcp.json");
        std::fs::create_dir_all(good.parent().unwrap()).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        std::fs::write(&good, r#"{"mcpServers": {"good": {"command": "x"}}}"#).unwrap();
        Fixture { root }
    }

    /// Discovery, on its own thread, bounded: a hang fails the test instead of hanging it.
    fn load(&self) -> LoadedConfigs {
        let project = self.root.join("project");
        let options = DiscoveryOptions {
            home: Some(self.root.join("home")),
            ..DiscoveryOptions::default()
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(load_all_mcp_configs(&project, &options));
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("discovery did not return within 20 s")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The files a project or a home can hold, each read by a different source.
const PLACES: [&str; 5] = [
    "project/.mcp.json",
    "project/.vscode/mcp.json",
    "home/.claude.json",
    "home/.codex/config.toml",
    "home/.mcp-runtime/mcp.json",
];

fn check(name: &str, what: Hostile, expect: &str) {
    for (i, place) in PLACES.iter().enumerate() {
        let f = Fixture::new(&format!("{name}-{i}"));
        let path = f.root.join(place);
        make(&path, what);
        let loaded = f.load();
        assert_eq!(
            loaded.warnings.len(),
            1,
            "{what:?} at {place}: {:?}",
            loaded.warnings
        );
        let warning = &loaded.warnings[0];
        assert!(
            warning.contains(&path.display().to_string()) && warning.contains(expect),
            "{what:?} at {place}: {warning}"
        );
        assert!(
            loaded.configs.contains_key("good"),
            "{what:?} at {place}: the other sources' servers are kept"
        );
    }
}

#[test]
fn a_symlink_to_dev_zero_is_refused_at_once() {
    check("zero", Hostile::Symlink("/dev/zero"), "not a regular file");
}

#[test]
fn a_symlink_to_dev_urandom_is_refused_at_once() {
    check(
        "urandom",
        Hostile::Symlink("/dev/urandom"),
        "not a regular file",
    );
}

#[test]
fn a_symlink_to_dev_stdin_is_refused_at_once() {
    // Whatever the test's stdin is (a pipe, a terminal, /dev/null), it is not a regular file.
    check(
        "stdin",
        Hostile::Symlink("/dev/stdin"),
        "not a regular file",
    );
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    check("fifo", Hostile::Fifo, "a FIFO");
}

#[test]
fn a_file_over_the_cap_is_refused_without_reading_it() {
    // 4 MiB for config files; ~/.claude.json has 64 MiB (it is Claude Code's state file too).
    check("big", Hostile::Oversized(65 << 20), "larger than");
    let f = Fixture::new("big-config");
    make(
        &f.root.join("project/.mcp.json"),
        Hostile::Oversized(5 << 20),
    );
    let loaded = f.load();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("larger than 4 MiB"));
}

#[test]
fn a_large_claude_state_file_under_its_cap_is_read() {
    // Real ~/.claude.json files reach tens of MiB: 5 MiB of project history is fine.
    let f = Fixture::new("claude-big");
    let padding = "x".repeat(5 << 20);
    let text = format!(
        r#"{{"history": "{padding}", "mcpServers": {{"from-claude": {{"command": "c"}}}}}}"#
    );
    std::fs::write(f.root.join("home/.claude.json"), text).unwrap();
    let loaded = f.load();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(loaded.configs.contains_key("from-claude"));
    assert!(loaded.configs.contains_key("good"));
}

#[test]
fn a_vscode_env_file_that_is_a_device_fails_that_server_only() {
    let f = Fixture::new("envfile");
    let vscode = f.root.join("project/.vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    std::os::unix::fs::symlink("/dev/zero", f.root.join("project/zero.env")).unwrap();
    std::fs::write(
        vscode.join("mcp.json"),
        r#"{"servers": {"env": {"type": "stdio", "command": "x", "envFile": "zero.env"}}}"#,
    )
    .unwrap();
    let loaded = f.load();
    let problem = loaded.problems.iter().find(|p| p.name == "env").unwrap();
    assert!(
        problem.message.contains("not a regular file"),
        "{}",
        problem.message
    );
    assert!(loaded.configs.contains_key("good"));
}
