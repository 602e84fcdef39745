//! A stdio server's stderr: each line is logged at `debug` under the target
//! `mcp::<server>::stderr` and kept in a bounded tail for error messages. Whoever reads stdout
//! reads stderr too (see `pipes`); once stdout ended, `mcp-<server>-stderr` drains the rest.

use std::collections::VecDeque;
use std::io::{BufReader, Read};
#[cfg(unix)]
use std::sync::Arc;

use parking_lot::Mutex;

use super::Shared;
use crate::transport::lines::{read_line_capped, trim_line, LineRead};

/// Longest stderr line kept; the rest of a longer line is dropped.
pub(super) const STDERR_LINE_CAP: usize = 16 * 1024;

/// Drains `pipe` on `mcp-<server>-stderr`, after the bytes `rest` already read of it.
#[cfg(unix)]
pub(super) fn drain_on_thread(
    shared: &Arc<Shared>,
    pipe: std::process::ChildStderr,
    rest: Vec<u8>,
) {
    let s = Arc::clone(shared);
    let spawned = super::thread(
        shared,
        "stderr",
        crate::panic::Boundary::StdioStderr,
        move || drain(&s, std::io::Cursor::new(rest).chain(pipe)),
    );
    if spawned.is_err() {
        shared.process.mark_stderr_done();
    }
}

/// Reads `stderr` line by line (blocking) until it ends.
pub(super) fn drain(shared: &Shared, stderr: impl Read) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::with_capacity(1024);
    loop {
        let res = read_line_capped(&mut reader, &mut buf, STDERR_LINE_CAP, true);
        let done = !matches!(res, Ok(LineRead::Line) | Ok(LineRead::TooLong));
        if !(done && buf.is_empty()) {
            line(shared, &buf, matches!(res, Ok(LineRead::TooLong)));
        }
        if done {
            break;
        }
    }
    shared.process.mark_stderr_done();
}

/// One stderr line: logged at `debug` under `mcp::<server>::stderr`, and kept in the tail.
pub(super) fn line(shared: &Shared, raw: &[u8], truncated: bool) {
    let mut line = String::from_utf8_lossy(trim_line(raw)).into_owned();
    if truncated {
        line.push('…');
    }
    if log::log_enabled!(log::Level::Debug) {
        let target = format!("mcp::{}::stderr", shared.name);
        log::debug!(target: &target, "[{}] {line}", shared.name);
    }
    shared.tail.push(line);
}

/// The last lines of stderr, bounded.
pub(super) struct StderrTail {
    cap: usize,
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    /// Keeps the last `cap` lines.
    pub(super) fn new(cap: usize) -> StderrTail {
        StderrTail {
            cap,
            lines: Mutex::new(VecDeque::with_capacity(cap.min(64))),
        }
    }

    fn push(&self, line: String) {
        if self.cap == 0 {
            return;
        }
        let mut lines = self.lines.lock();
        if lines.len() == self.cap {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The lines kept, oldest first.
    pub(super) fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }
}
