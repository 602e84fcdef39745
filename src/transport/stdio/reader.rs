//! Reading a stdio server's stdout and stderr (Unix): by the `mcp-<server>-io` thread, or by a
//! caller that reads its own answer.
//!
//! Whoever reads waits on both pipes at once (`poll`): stdout lines become messages for the
//! [`Inbound`] sink, stderr lines are logged and kept. When stdout ends, stderr (which may still
//! be talking) gets a thread of its own for the teardown.
//!
//! A caller that needs neither cancellation nor progress and finds nobody else waiting *leads*:
//! it takes the pipes and reads until its own answer has been dispatched (or its deadline, or the
//! end), dispatching everything else it reads exactly as the io thread would. The answer then
//! wakes the caller itself instead of the io thread, which would wake the caller: one thread
//! hop less per call, which is most of a call's cost when client and server share a CPU.
//!
//! The io thread parks while callers lead. It reads again as soon as a caller that does not
//! lead is waiting, at close, or [`LINGER`] after the last leader left, so nothing the server
//! sends between calls waits longer than that. It parks only after a caller asked to lead while
//! it was reading, and only when nobody else is waiting for an answer.

use std::io::{ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::process::{ChildStderr, ChildStdout};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::{
    dispatch_line, drain_stderr, finish, read_available, set_nonblocking, stderr_line, thread,
    ReadOutcome, Shared, STDERR_LINE_CAP,
};
use crate::jsonrpc::Message;
use crate::transport::lines::{LineSplitter, Piece};
use crate::transport::Inbound;
use crate::Error;

/// How long the io thread stays parked after the last leader left.
const LINGER: Duration = Duration::from_millis(20);

/// The pipes and what was read of them: held by whoever reads.
struct Pipes {
    stdout: ChildStdout,
    stderr: Option<ChildStderr>,
    out: LineSplitter,
    err: LineSplitter,
    chunk: Vec<u8>,
    /// Where messages go (released with the pipes at the end).
    inbound: Arc<dyn Inbound>,
}

/// Who reads.
#[derive(Default)]
struct Lead {
    /// The io thread is parked.
    parked: bool,
    /// A caller is reading for itself.
    leader: bool,
    /// A caller could not lead because the io thread was reading: it parks when it can.
    want_lead: bool,
    /// The io thread must read again now (a waiting caller that does not lead, or close).
    resume: bool,
    /// When the last leader left.
    last_lead: Option<Instant>,
    /// The requests whose callers wait without leading: (id, until when they wait).
    waiting: Vec<(i64, Instant)>,
    /// A leader saw stdout end: the io thread tears down (which may take the close's grace
    /// periods, not the caller's time).
    ending: Option<ReadOutcome>,
    /// Reading is over.
    ended: bool,
}

impl Lead {
    fn anyone_waiting(&mut self) -> bool {
        if self.waiting.is_empty() {
            return false;
        }
        let now = Instant::now();
        self.waiting.retain(|(_, until)| *until > now);
        !self.waiting.is_empty()
    }

    fn answered(&mut self, id: i64) {
        if let Some(i) = self.waiting.iter().position(|(w, _)| *w == id) {
            self.waiting.swap_remove(i);
        }
    }
}

/// The reading side of one stdio server.
pub(super) struct Reader {
    pipes: Mutex<Option<Pipes>>,
    lead: Mutex<Lead>,
    changed: Condvar,
    max: usize,
}

impl Reader {
    pub(super) fn new(
        stdout: ChildStdout,
        stderr: ChildStderr,
        max: usize,
        inbound: Arc<dyn Inbound>,
    ) -> Reader {
        set_nonblocking(stdout.as_raw_fd(), true);
        set_nonblocking(stderr.as_raw_fd(), true);
        Reader {
            pipes: Mutex::new(Some(Pipes {
                stdout,
                stderr: Some(stderr),
                out: LineSplitter::new(max, false),
                err: LineSplitter::new(STDERR_LINE_CAP, true),
                // Per server; most messages fit in one read, and a server starting with a fleet
                // should not cost a 64 KiB buffer (the pipe's own size) each.
                chunk: vec![0u8; 16 * 1024],
                inbound,
            })),
            // Parked from the start: the handshake's first request (on the connecting
            // thread) reads its own answer too. If nobody leads, the io thread starts reading
            // after `LINGER`, as after any call.
            lead: Mutex::new(Lead {
                parked: true,
                last_lead: Some(Instant::now()),
                ..Lead::default()
            }),
            changed: Condvar::new(),
            max,
        }
    }

    /// The io thread: reads until the end, parked while callers lead.
    pub(super) fn run(&self, shared: &Arc<Shared>) {
        loop {
            let ending = {
                let mut lead = self.lead.lock();
                // Never while a caller leads: its answer is its own to read. A leader that
                // leaves does not wake us unless someone waits (that would cost every call a
                // wake-up), so while one leads we look again every `LINGER`.
                while lead.parked && !lead.ended {
                    let since = lead.last_lead.unwrap_or_else(Instant::now);
                    let due = lead.resume || lead.ending.is_some() || since.elapsed() >= LINGER;
                    if !lead.leader && due {
                        lead.parked = false;
                        lead.resume = false;
                        break;
                    }
                    let until = if lead.leader {
                        Instant::now() + LINGER
                    } else {
                        since + LINGER
                    };
                    self.changed.wait_until(&mut lead, until);
                }
                if lead.ended {
                    return;
                }
                lead.ending.take()
            };
            let mut guard = self.pipes.lock();
            if let Some(outcome) = ending {
                return self.end(guard, shared, outcome);
            }
            let Some(pipes) = guard.as_mut() else {
                return;
            };
            // No timeout: the process's output or its end (EOF, or the kill at close) is what
            // wakes us.
            let step = pipes.step(shared, -1, &mut |id| self.note(id));
            if let Some(outcome) = step {
                return self.end(guard, shared, outcome);
            }
            let mut lead = self.lead.lock();
            if lead.want_lead && !lead.anyone_waiting() {
                lead.want_lead = false;
                lead.parked = true;
                lead.last_lead = Some(Instant::now());
            }
        }
    }

    /// Sends one message; for a request, reads its answer here when the caller may lead.
    pub(super) fn send(
        &self,
        shared: &Arc<Shared>,
        message: &Message,
        deadline: Instant,
        inline: bool,
    ) -> Result<(), Error> {
        let line = message.to_line();
        let id = match message {
            Message::Request(r) => r.id.as_i64(),
            _ => None,
        };
        let Some(id) = id else {
            return shared.stdin.send(&line, None).map(|_| ());
        };
        let send = |line: &[u8]| {
            let sent = shared.stdin.send(line, Some(id));
            if let Err(e) = &sent {
                shared.write_failed(id, e);
            }
            sent
        };
        let leads = {
            let mut lead = self.lead.lock();
            if lead.ended || lead.ending.is_some() {
                false
            } else if inline && lead.parked && !lead.leader {
                lead.leader = true;
                true
            } else {
                if lead.waiting.len() >= 64 {
                    // Answers that never came (their callers gave up) leave with their deadline.
                    lead.anyone_waiting();
                }
                lead.waiting.push((id, deadline));
                if !lead.parked {
                    lead.want_lead |= inline;
                } else if !lead.leader {
                    lead.resume = true;
                    self.changed.notify_one();
                }
                // Parked under a leader: the leader reads this answer, or wakes the io thread
                // when it leaves first.
                false
            }
        };
        if !leads {
            return send(&line).map(|_| ());
        }
        let sent = send(&line);
        // Only once the whole request is in the pipe: one still queued is the writer's, and
        // if the pipe breaks under it the request fails through the sink, which a caller
        // reading here would not see until its deadline.
        if sent == Ok(true) {
            self.read_until(shared, id, deadline);
        }
        let mut lead = self.lead.lock();
        lead.leader = false;
        lead.last_lead = Some(Instant::now());
        if sent == Ok(false) {
            // Its answer is the io thread's to read.
            lead.waiting.push((id, deadline));
        }
        if lead.anyone_waiting() {
            lead.resume = true;
        }
        if lead.resume || lead.ending.is_some() {
            self.changed.notify_one();
        }
        sent.map(|_| ())
    }

    /// Wakes the io thread to read (at close: it sees the end).
    pub(super) fn wake(&self) {
        self.lead.lock().resume = true;
        self.changed.notify_one();
    }

    /// Reads as the leader until `id`'s answer was dispatched, `deadline`, or the end. Stderr
    /// is read too, so the tail is current when the call returns: the poll waits on both
    /// pipes, and an answer found before any poll is followed by one read of stderr.
    fn read_until(&self, shared: &Arc<Shared>, id: i64, deadline: Instant) {
        let mut guard = self.pipes.lock();
        let mut first = true;
        let mut answered = false;
        while !answered {
            let Some(pipes) = guard.as_mut() else {
                return;
            };
            let mut seen = |rid: i64| {
                if rid == id {
                    answered = true;
                } else {
                    self.note(rid);
                }
            };
            let step = if std::mem::take(&mut first) {
                // Read before the first wait: on a shared CPU the server has often answered
                // while the request was written, and a read that finds the answer saves a
                // `poll`. What the server wrote to stderr before it answered is there by now.
                let step = pipes.read_stdout(shared, &mut seen);
                if answered {
                    pipes.read_stderr(shared);
                }
                step
            } else {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return;
                }
                // Rounded up, so the wait never ends just before the deadline.
                let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                pipes.step(shared, ms, &mut seen)
            };
            if let Some(outcome) = step {
                self.lead.lock().ending = Some(outcome);
                return;
            }
        }
    }

    /// Every response read: an answer to a caller that waits without leading is off the list.
    fn note(&self, id: i64) {
        self.lead.lock().answered(id);
    }

    /// Stdout ended: hand stderr to a thread of its own, and tell the sink.
    fn end(
        &self,
        mut guard: MutexGuard<'_, Option<Pipes>>,
        shared: &Arc<Shared>,
        outcome: ReadOutcome,
    ) {
        let pipes = guard.take();
        drop(guard);
        self.lead.lock().ended = true;
        self.changed.notify_all();
        let Some(Pipes {
            stderr,
            mut err,
            inbound,
            ..
        }) = pipes
        else {
            return;
        };
        if let Some(pipe) = stderr {
            set_nonblocking(pipe.as_raw_fd(), false);
            let rest = err.take_rest();
            let s = Arc::clone(shared);
            let spawned = thread(&shared.name, "stderr", move || {
                drain_stderr(&s, std::io::Cursor::new(rest).chain(pipe))
            });
            if spawned.is_err() {
                shared.process.mark_stderr_done();
            }
        }
        finish(shared, outcome, self.max, inbound);
    }
}

impl Pipes {
    /// Waits up to `timeout_ms` (-1: no limit) for output, and handles what came. `Some` when
    /// stdout ended.
    fn step(
        &mut self,
        shared: &Shared,
        timeout_ms: i32,
        seen: &mut dyn FnMut(i64),
    ) -> Option<ReadOutcome> {
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
            return Some(Err(Some(e)));
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
    fn read_stdout(&mut self, shared: &Shared, seen: &mut dyn FnMut(i64)) -> Option<ReadOutcome> {
        let mut too_long = false;
        let (out, inbound) = (&mut self.out, &*self.inbound);
        let ended = read_available(&mut self.stdout, &mut self.chunk, &mut |bytes| {
            out.push(bytes, &mut |piece| match piece {
                Piece::Line(l) => {
                    dispatch_line(shared, l, inbound, seen);
                    true
                }
                Piece::TooLong(_) => {
                    too_long = true;
                    false
                }
            });
            !too_long
        });
        if too_long {
            return Some(Err(None));
        }
        match ended {
            Some(Ok(())) => {
                dispatch_line(shared, &self.out.take_rest(), &*self.inbound, seen);
                Some(Ok(()))
            }
            Some(Err(e)) => Some(Err(Some(e))),
            None => None,
        }
    }

    fn read_stderr(&mut self, shared: &Shared) {
        let Some(pipe) = self.stderr.as_mut() else {
            return;
        };
        let err = &mut self.err;
        let ended = read_available(pipe, &mut self.chunk, &mut |bytes| {
            err.push(bytes, &mut |piece| {
                match piece {
                    Piece::Line(l) => stderr_line(shared, l, false),
                    Piece::TooLong(l) => stderr_line(shared, l, true),
                }
                true
            });
            true
        });
        if ended.is_some() {
            let rest = self.err.take_rest();
            if !rest.is_empty() {
                stderr_line(shared, &rest, false);
            }
            self.stderr = None;
            shared.process.mark_stderr_done();
        }
    }
}
