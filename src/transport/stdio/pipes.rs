//! Reading a stdio server's output: stdout lines become messages for the [`Inbound`] sink,
//! stderr lines are logged and kept, and [`ReadEnd`] says how reading stdout ended.
//!
//! On Unix both pipes are non-blocking and held together as [`Pipes`] by whoever reads (the io
//! thread or a leader, see `reader`): one `poll` waits on both. Elsewhere a thread reads stdout
//! with blocking reads and another drains stderr.

#[cfg(unix)]
use std::io::{ErrorKind, Read};
#[cfg(unix)]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::process::{ChildStderr, ChildStdout};
use std::sync::Arc;

#[cfg(unix)]
use super::stderr::{self, STDERR_LINE_CAP};
use super::{salvage, Shared};
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::transport::lines::trim_line;
#[cfg(unix)]
use crate::transport::lines::{LineSplitter, Piece};
#[cfg(unix)]
use crate::transport::process::set_nonblocking;
use crate::transport::Inbound;

/// How reading stdout ended.
#[derive(Debug)]
pub(super) enum ReadEnd {
    /// End of file: the server exited, or closed its stdout.
    Eof,
    /// Reading (or waiting on) the pipe failed.
    Failed(std::io::Error),
    /// A line was longer than `max_message_bytes` (it was never buffered whole).
    TooLong,
    /// Before its first message the server printed more output that is not JSON-RPC than
    /// [`NOISE_LINE_BOUND`](super::noise::NOISE_LINE_BOUND) lines or
    /// [`NOISE_BYTE_BOUND`](super::noise::NOISE_BYTE_BOUND) bytes.
    Noise,
}

/// The pipes and what was read of them: held by whoever reads.
#[cfg(unix)]
pub(super) struct Pipes {
    stdout: ChildStdout,
    stderr: Option<ChildStderr>,
    out: LineSplitter,
    err: LineSplitter,
    chunk: Vec<u8>,
    /// Where messages go (released with the pipes at the end).
    inbound: Arc<dyn Inbound>,
}

#[cfg(unix)]
impl Pipes {
    /// Both pipes, made non-blocking; stdout lines up to `max` bytes.
    pub(super) fn new(
        stdout: ChildStdout,
        stderr: ChildStderr,
        max: usize,
        inbound: Arc<dyn Inbound>,
    ) -> Pipes {
        set_nonblocking(&stdout, true);
        set_nonblocking(&stderr, true);
        Pipes {
            stdout,
            stderr: Some(stderr),
            out: LineSplitter::new(max, false),
            err: LineSplitter::new(STDERR_LINE_CAP, true),
            // Per server; most messages fit in one read, and a server starting with a fleet
            // should not cost a 64 KiB buffer (the pipe's own size) each.
            chunk: vec![0u8; 16 * 1024],
            inbound,
        }
    }

    /// Waits up to `timeout_ms` (-1: no limit) for output, and handles what came. `Some` when
    /// stdout ended.
    pub(super) fn step(
        &mut self,
        shared: &Shared,
        timeout_ms: i32,
        seen: &mut dyn FnMut(i64),
    ) -> Option<ReadEnd> {
        let mut fds = [
            libc::pollfd {
                fd: self.stdout.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stderr.as_ref().map_or(-1, |e| e.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds for descriptors we own (a negative one is ignored).
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) } < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                return None;
            }
            return Some(ReadEnd::Failed(e));
        }
        if fds[1].revents != 0 {
            self.read_stderr(shared);
        }
        if fds[0].revents == 0 {
            return None;
        }
        self.read_stdout(shared, seen)
    }

    /// Reads and dispatches what stdout has (without waiting). `Some` when stdout ended.
    pub(super) fn read_stdout(
        &mut self,
        shared: &Shared,
        seen: &mut dyn FnMut(i64),
    ) -> Option<ReadEnd> {
        let mut stop = None;
        let (out, inbound) = (&mut self.out, &*self.inbound);
        let ended = read_available(&mut self.stdout, &mut self.chunk, &mut |bytes| {
            out.push(bytes, &mut |piece| match piece {
                Piece::Line(l) => {
                    if dispatch_line(shared, l, inbound, seen) {
                        stop = Some(ReadEnd::Noise);
                    }
                    stop.is_none()
                }
                Piece::TooLong(_) => {
                    stop = Some(ReadEnd::TooLong);
                    false
                }
            });
            stop.is_none()
        });
        if stop.is_some() {
            return stop;
        }
        match ended {
            Some(Ok(())) => {
                if dispatch_line(shared, &self.out.take_rest(), &*self.inbound, seen) {
                    return Some(ReadEnd::Noise);
                }
                Some(ReadEnd::Eof)
            }
            Some(Err(e)) => Some(ReadEnd::Failed(e)),
            None => None,
        }
    }

    /// Reads and handles what stderr has (without waiting).
    pub(super) fn read_stderr(&mut self, shared: &Shared) {
        let Some(pipe) = self.stderr.as_mut() else {
            return;
        };
        let err = &mut self.err;
        let ended = read_available(pipe, &mut self.chunk, &mut |bytes| {
            err.push(bytes, &mut |piece| {
                match piece {
                    Piece::Line(l) => stderr::line(shared, l, false),
                    Piece::TooLong(l) => stderr::line(shared, l, true),
                }
                true
            });
            true
        });
        if ended.is_some() {
            let rest = self.err.take_rest();
            if !rest.is_empty() {
                stderr::line(shared, &rest, false);
            }
            self.stderr = None;
            shared.process.mark_stderr_done();
        }
    }

    /// Stdout ended: stderr (which may still be talking) goes to a thread of its own for the
    /// teardown. Gives back the sink.
    pub(super) fn release(self, shared: &Arc<Shared>) -> Arc<dyn Inbound> {
        let Pipes {
            stderr,
            mut err,
            inbound,
            ..
        } = self;
        if let Some(pipe) = stderr {
            set_nonblocking(&pipe, false);
            stderr::drain_on_thread(shared, pipe, err.take_rest());
        }
        inbound
    }
}

/// Reads what a non-blocking pipe has now, handing each chunk to `on_bytes` (which returns
/// false to stop). `Some(Ok)` at EOF, `Some(Err)` on a read error, `None` when it would block.
#[cfg(unix)]
fn read_available(
    pipe: &mut impl Read,
    chunk: &mut [u8],
    on_bytes: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<std::io::Result<()>> {
    loop {
        match pipe.read(chunk) {
            Ok(0) => return Some(Ok(())),
            Ok(n) => {
                // A short read took all there was: back to poll, which says when there is more
                // (this saves a read that would only say "would block").
                if !on_bytes(&chunk[..n]) || n < chunk.len() {
                    return None;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(e)),
        }
    }
}

/// The reader thread (not Unix): blocking reads of stdout until it ends.
#[cfg(not(unix))]
pub(super) fn read_loop(
    shared: &Shared,
    stdout: impl std::io::Read,
    max: usize,
    inbound: Arc<dyn Inbound>,
) {
    use crate::transport::lines::{read_line_capped, reuse, LineRead};
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let end = loop {
        match read_line_capped(&mut reader, &mut buf, max, false) {
            Ok(LineRead::Line) => {
                if dispatch_line(shared, &buf, &*inbound, &mut |_| {}) {
                    break ReadEnd::Noise;
                }
                reuse(&mut buf);
            }
            Ok(LineRead::Eof) => {
                if dispatch_line(shared, &buf, &*inbound, &mut |_| {}) {
                    break ReadEnd::Noise;
                }
                break ReadEnd::Eof;
            }
            Ok(LineRead::TooLong) => break ReadEnd::TooLong,
            Err(e) => break ReadEnd::Failed(e),
        }
    };
    drop(reader);
    shared.finish(end, max, inbound);
}

/// Parses one stdout line and hands its messages to `inbound`; the id of each response is shown
/// to `seen` first. A line that cannot be parsed but is recognisably the response to one of our
/// requests (invalid UTF-8 in a string, nested deeper than the parser goes) fails that request
/// with [`Error::Protocol`] instead of leaving it to its timeout; other such lines are skipped
/// (and counted while no message has come: true when that output has passed its bound).
fn dispatch_line(
    shared: &Shared,
    raw: &[u8],
    inbound: &dyn Inbound,
    seen: &mut dyn FnMut(i64),
) -> bool {
    let line = trim_line(raw);
    if line.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    match Message::parse(line) {
        Ok(messages) => {
            shared.noise.message();
            for m in messages {
                if let Message::Response(r) = &m {
                    if let Some(id) = r.id.as_ref().and_then(|id| id.as_i64()) {
                        seen(id);
                    }
                }
                inbound.on_message(m);
            }
        }
        Err(e) => match salvage::response_id(line) {
            Some(id) => {
                log::debug!(
                    "[{}] the response to request {id} cannot be parsed ({e}): {}",
                    shared.name,
                    shared.noise.quote(line)
                );
                seen(id);
                inbound.on_request_failed(
                    &crate::jsonrpc::RequestId::Number(id),
                    Error::protocol(format!("the response could not be parsed: {e}")),
                );
            }
            None => {
                log::debug!(
                    "[{}] skipping a stdout line that is {e}: {}",
                    shared.name,
                    shared.noise.quote(line)
                );
                return shared.noise.skipped(line);
            }
        },
    }
    false
}
