//! Everything the CLI prints on stdout goes through `out!` and `outln!`: a write that fails
//! ends the command the way a Unix tool ends, never with a panic (which `println!` gives). A
//! closed pipe (`mcp servers | head -1`) ends it quietly with status 141, as the shell reports a
//! tool that SIGPIPE stopped; any other failure (`> /dev/full`) is one line on stderr and status
//! 74 (EX_IOERR). Either way the servers are closed first (the cleanups the signal handling
//! runs). The demo server's stdout is its MCP channel and does not use these.

use std::io::Write;

/// Exit status after stdout was closed by its reader.
pub const CLOSED_PIPE: i32 = 141;
/// Exit status after stdout could not be written (sysexits' EX_IOERR).
pub const WRITE_FAILED: i32 = 74;

/// Prints to stdout; see the module's documentation for a failed write.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!($($arg)*))
    };
}

/// Prints a line to stdout; see the module's documentation for a failed write.
macro_rules! outln {
    () => {
        $crate::output::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes to stdout (line-buffered, as `print!` does).
pub fn write_out(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args) {
        failed(e);
    }
}

/// The width of a column: its longest entry, in characters (so a long name or state keeps the
/// columns after it aligned).
pub fn column_width<'a>(entries: impl IntoIterator<Item = &'a str>) -> usize {
    entries
        .into_iter()
        .map(|e| e.chars().count())
        .max()
        .unwrap_or(0)
}

/// Flushes stdout at the end of a command (a block-buffered tail would otherwise fail unseen).
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        failed(e);
    }
}

fn failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        crate::signals::exit_now(CLOSED_PIPE);
    }
    eprintln!("mcp: cannot write the output: {e}");
    crate::signals::exit_now(WRITE_FAILED);
}

/// A sandbox's rules for `--json` (VS Code's names).
pub fn sandbox_json(sandbox: &mcp_runtime::transport::Sandbox) -> serde_json::Value {
    let paths = |p: &[std::path::PathBuf]| -> Vec<String> {
        p.iter().map(|p| p.display().to_string()).collect()
    };
    serde_json::json!({
        "allowWrite": paths(&sandbox.allow_write),
        "denyRead": paths(&sandbox.deny_read),
        "denyWrite": paths(&sandbox.deny_write),
        "allowedDomains": sandbox.allowed_domains,
        "deniedDomains": sandbox.denied_domains,
    })
}
