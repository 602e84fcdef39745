//! The third-party reference server `@modelcontextprotocol/server-everything` (npm), installed
//! into the ignored `.interop/` folder (by `.ci/run`, or here on first use).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The version the interop tests pin.
pub const VERSION: &str = "2026.8.31";

/// The server's entry script, or `None` (said loudly) when node is not installed.
pub fn entry_script() -> Option<PathBuf> {
    static ENTRY: OnceLock<Option<PathBuf>> = OnceLock::new();
    ENTRY.get_or_init(install).clone()
}

fn install() -> Option<PathBuf> {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("\n=== SKIPPED: node is not installed; the server-everything interop tests did not run ===\n");
        return None;
    }
    let prefix = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".interop");
    let script = prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !script.exists() {
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-package-lock",
                "--prefix",
            ])
            .arg(&prefix)
            .arg(format!("@modelcontextprotocol/server-everything@{VERSION}"))
            .status()
            .expect("run npm");
        assert!(status.success(), "npm install of server-everything failed");
    }
    assert!(
        script.exists(),
        "{} is missing after npm install",
        script.display()
    );
    Some(script)
}
