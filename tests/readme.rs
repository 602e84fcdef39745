//! The README's `mcp` examples as written: every line of the tour block runs (with `cargo run
//! --` standing for the built `mcp`, as it does after `cargo build`), from the checkout and from
//! another directory; every line of its example-programs block runs too; and the help the
//! command's reference (`docs/cli.md`) quotes is the command's own.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn readme() -> String {
    read("README.md")
}

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap()
}

/// The lines of the fenced block after `marker`.
fn block_after(text: &str, marker: &str) -> Vec<String> {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the file"));
    let rest = &text[at..];
    let open = rest.find("```").unwrap();
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body.find("\n```").unwrap();
    body[..end].lines().map(str::to_owned).collect()
}

/// A shell function `cargo` that runs `cargo run [--quiet] -- ARGS` as the built `mcp`,
/// `cargo run --example NAME -- ARGS` as the built example, and `cargo build` as nothing (the
/// test binaries and examples are built already; a nested cargo would wait on this build's
/// lock). A function, not a script on `PATH`: a script this process has just written can fail
/// to run (`ETXTBSY`) while another test's thread forks with it still open, and the shell
/// would then find the real `cargo` instead.
fn cargo_function() -> String {
    let examples = common::example_path("agent");
    format!(
        "cargo() {{\n\
         [ \"$1\" = build ] && return 0\n\
         [ \"$1\" = run ] || {{ echo \"the shim runs only cargo run and cargo build\" >&2; return 97; }}\n\
         shift\n\
         [ \"$1\" = --quiet ] && shift\n\
         if [ \"$1\" = --example ]; then name=$2; shift 2; [ \"$1\" = -- ] && shift; '{}'/\"$name\" \"$@\"; return; fi\n\
         [ \"$1\" = -- ] && shift\n\
         '{}' \"$@\"\n\
         }}\n",
        examples.parent().unwrap().display(),
        common::cli_path().display()
    )
}

fn run_line(line: &str, cwd: &Path, home: &Path) -> Output {
    Command::new("sh")
        .args(["-c", &format!("{}{line}", cargo_function())])
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn every_line_of_the_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = common::temp_dir("readme-tour");
    let lines = block_after(&readme(), "<!-- tour:");
    assert!(lines.len() >= 10, "the tour block: {lines:?}");
    for line in &lines {
        let out = run_line(line, root, &home);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && !stdout.trim().is_empty(),
            "{line}\nstatus {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        if line.contains("call mcp_fast_add a=2 b=3.5") {
            assert_eq!(stdout.trim(), "5.5", "{line}");
        }
    }
}

#[test]
fn every_line_of_the_example_programs_block_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = common::temp_dir("readme-examples");
    let lines = block_after(&readme(), "<!-- examples:");
    assert_eq!(lines.len(), 3, "the examples block: {lines:?}");
    // The block names the command as `target/debug/mcp`: the built one when the tests are
    // built into the checkout's own target directory, as `cargo test` there does.
    let own_target = root
        .join("target/debug/mcp")
        .canonicalize()
        .is_ok_and(|p| p == common::cli_path().canonicalize().unwrap());
    for line in &lines {
        let out = run_line(line, root, &home);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{line}\nstatus {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        if line.contains("--example agent") && own_target {
            assert!(stdout.contains("mcp_fast_add -> 5.5"), "{line}\n{stdout}");
        }
        if line.contains("--example editor") {
            assert!(stdout.contains("[tools] "), "{line}\n{stdout}");
        }
    }
}

#[test]
fn the_sample_config_works_from_any_directory() {
    let home = common::temp_dir("readme-anywhere");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp.json");
    let out = common::cli(&home)
        .current_dir(&home)
        .arg("--config")
        .arg(&config)
        .args(["call", "mcp_fast_add", "a=2", "b=3.5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5.5");
}

#[test]
fn the_quoted_help_is_the_commands_own() {
    let quoted = block_after(&read("docs/cli.md"), "## The `mcp` command in full").join("\n");
    let home = common::temp_dir("readme-help");
    let out = common::cli(&home).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        quoted.trim_end(),
        help.trim_end(),
        "docs/cli.md's help differs from `mcp --help`: paste the new help in"
    );
}
