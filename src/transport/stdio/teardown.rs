//! How a stdio connection ends: close (stdin closed, then the escalation of
//! `ServerProcess::terminate`), the end of stdout (every pending call fails with the reason,
//! then the same teardown), and a stdin the server closed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use super::guardian;
use super::noise::{NOISE_BYTE_BOUND, NOISE_LINE_BOUND};
use super::pipes::ReadEnd;
use super::{Shared, KILL_WAIT};
use crate::error::Error;
use crate::transport::Inbound;

/// How long the reader waits, after the process exited, for stderr to be drained.
const STDERR_SETTLE: Duration = Duration::from_millis(250);
/// After stdout ended (or stdin broke): how long the server's exit status is awaited, to say
/// "exited (status)" rather than "closed its stdout" when it is exiting anyway.
const EXIT_SETTLE: Duration = Duration::from_millis(100);

/// Where the teardown is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Not closing.
    Running,
    /// One caller tears the process down; others wait for it.
    ShuttingDown,
    /// The process is gone (or outlasted the escalation).
    Done,
}

impl Shared {
    /// Closes stdin and escalates until the process is gone. The first caller does the work;
    /// concurrent callers wait for it (bounded).
    pub(super) fn shutdown(&self) {
        {
            let mut phase = self.phase.lock();
            match *phase {
                Phase::Done => return,
                Phase::ShuttingDown => {
                    let deadline =
                        Instant::now() + self.grace * 2 + KILL_WAIT + Duration::from_secs(1);
                    while *phase != Phase::Done {
                        if self
                            .phase_changed
                            .wait_until(&mut phase, deadline)
                            .timed_out()
                        {
                            return;
                        }
                    }
                    return;
                }
                Phase::Running => *phase = Phase::ShuttingDown,
            }
        }
        // Closes stdin once whatever is queued is written.
        self.stdin.close();
        let gone = self.process.terminate(self.grace);
        #[cfg(target_os = "linux")]
        if gone {
            guardian::forget(self.process.pid());
        }
        #[cfg(not(target_os = "linux"))]
        let _ = gone;
        // The sandbox's proxy and temporary directory end with the process.
        let guard = self.sandbox.lock().take();
        drop(guard);
        *self.phase.lock() = Phase::Done;
        self.phase_changed.notify_all();
    }

    /// One of the connection's threads panicked: the connection ends with `error` (pending
    /// calls fail with it now), then the process is stopped.
    pub(super) fn panicked(&self, error: Error) {
        self.process.mark_stderr_done();
        self.inbound.on_closed(error);
        self.shutdown();
    }

    /// After stdout ended: tell the sink why the connection ended, then stop the process.
    pub(super) fn finish(&self, end: ReadEnd, max: usize, inbound: Arc<dyn Inbound>) {
        match end {
            ReadEnd::Noise => {
                let (lines, first) = self.noise.report().unwrap_or_default();
                let error = Error::protocol(format!(
                    "the server printed {lines} lines that are not JSON-RPC on stdout before \
                     its first message (more than {NOISE_LINE_BOUND} lines or {} MiB; the \
                     first: \"{first}\"); it is stopped",
                    NOISE_BYTE_BOUND >> 20
                ));
                // The caller gets the error; the log has it for a host that looks there.
                log::debug!("[{}] {error}", self.name);
                inbound.on_closed(error);
                self.shutdown();
            }
            ReadEnd::TooLong => {
                log::warn!(
                    "[{}] the server sent a message over {max} bytes; closing the connection",
                    self.name
                );
                inbound.on_closed(Error::MessageTooLarge { limit: max });
                self.shutdown();
            }
            // The connection ends first (pending calls fail now, with the reason); the
            // teardown, which may take the grace periods, comes after.
            ReadEnd::Eof => {
                inbound.on_closed(self.closed_error(None));
                self.shutdown();
            }
            ReadEnd::Failed(e) => {
                inbound.on_closed(self.closed_error(Some(e)));
                self.shutdown();
            }
        }
    }

    /// Why the connection ended, for the error every pending request gets.
    fn closed_error(&self, read_error: Option<std::io::Error>) -> Error {
        if self.close_requested.load(Ordering::SeqCst) {
            return Error::closed_by_owner();
        }
        // A server that ends its stdout is usually exiting: a moment for its status (and its
        // last stderr lines). One that lingers is reported as such, without waiting longer.
        let status = self.process.wait_exit(Instant::now() + EXIT_SETTLE);
        let reason = match (status, read_error) {
            (_, Some(e)) => format!("reading the server's stdout failed: {e}"),
            (Some(status), None) => format!("the server process exited ({status})"),
            (None, None) => "the server closed its stdout (the process was still running; it \
                             is stopped)"
                .to_owned(),
        };
        if status.is_some() {
            self.process
                .wait_stderr_done(Instant::now() + STDERR_SETTLE);
        }
        Error::TransportClosed {
            reason,
            stderr_tail: self.tail.lines(),
        }
    }

    /// Writing request `id` to stdin failed. When the server is exiting, the reader fails the
    /// request with the exit's reason; when it closed its stdin and lives on, nothing would
    /// ever answer: the request fails now.
    pub(super) fn write_failed(&self, id: i64, error: &Error) {
        if self.close_requested.load(Ordering::SeqCst) {
            return;
        }
        if !self.stdin_gone.load(Ordering::SeqCst) {
            if self
                .process
                .wait_exit(Instant::now() + EXIT_SETTLE)
                .is_some()
            {
                return;
            }
            self.stdin_gone.store(true, Ordering::SeqCst);
            log::debug!("[{}] the server closed its stdin: {error}", self.name);
        }
        self.inbound.on_request_failed(
            &crate::jsonrpc::RequestId::Number(id),
            Error::TransportClosed {
                reason: "the server closed its stdin (the request could not be written)".to_owned(),
                stderr_tail: self.tail.lines(),
            },
        );
    }
}
