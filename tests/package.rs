//! The crate as it is published and installed: `cargo package` builds from what the package
//! holds, `cargo install` installs exactly the `mcp` command, and a host that turns the default
//! features off compiles nothing only the CLI needs.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS");
    cmd
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("cargo runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A target directory of its own: the one `cargo test` uses stays locked while tests run.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/package-check")
}

#[test]
fn the_package_builds_and_installs_only_the_mcp_command() {
    let target = target_dir();
    // `cargo package` unpacks the package and builds it: a file a build needs and the package
    // lacks fails here.
    run(cargo()
        .args(["package", "--allow-dirty", "--offline", "--quiet"])
        .arg("--target-dir")
        .arg(&target));
    let unpacked = target
        .join("package")
        .join(format!("mcp-runtime-{}", env!("CARGO_PKG_VERSION")));
    assert!(
        unpacked.join("Cargo.toml").is_file(),
        "{}",
        unpacked.display()
    );
    let listed = run(cargo().args(["package", "--list", "--allow-dirty", "--offline"]));
    for needed in [
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "README.md",
        // The module docs are these files (`include_str!`): the crate does not build without.
        "docs/host.md",
        "docs/cli.md",
        "src/bin/mcp/main.rs",
        // `cargo install --locked` installs the versions CI tested.
        "Cargo.lock",
    ] {
        assert!(listed.lines().any(|l| l == needed), "{needed} not packaged");
    }
    assert!(!listed
        .lines()
        .any(|l| l.starts_with("target/") || l.starts_with(".interop/")));

    let root = common::temp_dir("install-root");
    run(cargo()
        .args([
            "install",
            "--locked",
            "--offline",
            "--debug",
            "--quiet",
            "--path",
        ])
        .arg(&unpacked)
        .arg("--root")
        .arg(&root)
        .arg("--target-dir")
        .arg(&target));
    let mut installed: Vec<String> = std::fs::read_dir(root.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    installed.sort();
    let mcp = format!("mcp{}", std::env::consts::EXE_SUFFIX);
    assert_eq!(
        installed,
        std::slice::from_ref(&mcp),
        "bin/ holds exactly the CLI"
    );
    let version = run(Command::new(root.join("bin").join(&mcp)).arg("--version"));
    assert_eq!(version.trim(), format!("mcp {}", env!("CARGO_PKG_VERSION")));
    // The installed command is about 100 MB: not left behind.
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_host_without_default_features_compiles_nothing_only_the_cli_needs() {
    let tree = |extra: &[&str]| {
        run(cargo()
            .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
            .args(["--format", "{p}"])
            .args(extra))
    };
    let host = tree(&["--no-default-features"]);
    assert!(host.contains("ureq"), "{host}");
    for only_cli in ["env_logger", "clap", "clap_complete"] {
        assert!(
            !host.lines().any(|l| l.starts_with(&format!("{only_cli} "))),
            "a host's build has {only_cli}:\n{host}"
        );
    }
    let cli = tree(&[]);
    for only_cli in ["env_logger", "clap", "clap_complete"] {
        assert!(
            cli.lines().any(|l| l.starts_with(&format!("{only_cli} "))),
            "{only_cli}: {cli}"
        );
    }
}
