//! Leading (Unix): who reads a stdio server's stdout and stderr, the `mcp-<server>-io` thread
//! or a caller that reads its own answer.
//!
//! Whoever reads holds the [`Pipes`] and waits on both at once (`poll`): stdout lines become
//! messages for the [`Inbound`] sink, stderr lines are logged and kept. When stdout ends,
//! stderr (which may still be talking) gets a thread of its own for the teardown.
//!
//! A caller that needs neither cancellation nor progress and finds nobody else waiting *leads*:
//! it takes the pipes and reads until its own answer has been dispatched (or its deadline, or the
//! end), dispatching everything else it reads exactly as the io thread would. The answer then
//! wakes the caller itself instead of the io thread, which would wake the caller: one thread
//! hop less per call, which is most of a call's cost when client and server share a CPU.
//!
//! The io thread parks while callers lead. It reads again as soon as a caller that does not
//! lead is waiting, at close, or [`LINGER`](super::lead::LINGER) after the last leader left, so
//! nothing the server sends between calls waits longer than that. It parks only after a caller
//! asked to lead while it was reading, and only when nobody else is waiting for an answer. The
//! rules are the state machine [`Lead`] (see `lead`, which tests each transition); this file
//! does the I/O and the locking around it.
//!
//! Lock order: `pipes`, then `lead`; never `pipes` while holding `lead`. `pipes` is held by
//! whoever reads, across the `poll` and the dispatch (the sink and the stderr tail are called
//! with it held and take their own locks after it). `lead` is held only for one transition of
//! [`Lead`] (and the io thread's wait on `changed`): nothing is called and no other lock is
//! taken under it. So the io thread releases `lead` before it takes `pipes`, and a caller
//! decides under `lead` whether it leads, releases it, writes stdin (the writer's lock, with
//! neither held), and only then takes `pipes`. A leader takes `lead` again only to leave; a
//! response it reads for someone else takes `lead` (under `pipes`) to strike them off.
//!
//! Per leading call the leading costs `lead` twice (to be elected, to leave), `pipes` once and
//! one clock read (when it leaves); the transitions allocate nothing (the list of waiting
//! callers grows only for callers that do not lead).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::lead::{Call, IoTurn, Lead};
use super::pipes::{Pipes, ReadEnd};
use super::Shared;
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::transport::Inbound;

/// The reading side of one stdio server.
pub(super) struct Reader {
    /// Held by whoever reads; `None` once reading ended.
    pipes: Mutex<Option<Pipes>>,
    /// Who reads (after `pipes` in the lock order).
    lead: Mutex<Lead>,
    /// The io thread waits on it while parked.
    changed: Condvar,
    max: usize,
}

impl Reader {
    pub(super) fn new(
        stdout: std::process::ChildStdout,
        stderr: std::process::ChildStderr,
        max: usize,
        inbound: Arc<dyn Inbound>,
    ) -> Reader {
        Reader {
            pipes: Mutex::new(Some(Pipes::new(stdout, stderr, max, inbound))),
            lead: Mutex::new(Lead::new(Instant::now())),
            changed: Condvar::new(),
            max,
        }
    }

    /// The io thread: reads until the end, parked while callers lead.
    pub(super) fn run(&self, shared: &Arc<Shared>) {
        loop {
            let end = {
                let mut lead = self.lead.lock();
                loop {
                    match lead.io_turn(Instant::now) {
                        IoTurn::Wait(until) => {
                            self.changed.wait_until(&mut lead, until);
                        }
                        IoTurn::Read => break None,
                        IoTurn::End(end) => break Some(end),
                        IoTurn::Stop => return,
                    }
                }
            };
            let mut guard = self.pipes.lock();
            if let Some(end) = end {
                return self.end(guard, shared, end);
            }
            let Some(pipes) = guard.as_mut() else {
                return;
            };
            // No timeout: the process's output or its end (EOF, or the kill at close) is what
            // wakes us.
            let step = pipes.step(shared, -1, &mut |id| self.note(id));
            if let Some(end) = step {
                return self.end(guard, shared, end);
            }
            self.lead.lock().io_read(Instant::now);
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
        let call = {
            let mut lead = self.lead.lock();
            let call = lead.call(id, deadline, inline, Instant::now);
            if call == (Call::Wait { wake_io: true }) {
                self.changed.notify_one();
            }
            call
        };
        if call != Call::Lead {
            return send(&line).map(|_| ());
        }
        let sent = send(&line);
        // Only once the whole request is in the pipe: one still queued is the writer's, and
        // if the pipe breaks under it the request fails through the sink, which a caller
        // reading here would not see until its deadline.
        let end = if sent == Ok(true) {
            self.read_until(shared, id, deadline)
        } else {
            None
        };
        // Unsent: its answer is the io thread's to read.
        let unsent = (sent == Ok(false)).then_some((id, deadline));
        let mut lead = self.lead.lock();
        if lead.leader_leaves(Instant::now(), end, unsent) {
            self.changed.notify_one();
        }
        drop(lead);
        sent.map(|_| ())
    }

    /// Wakes the io thread to read (at close: it sees the end).
    pub(super) fn wake(&self) {
        self.lead.lock().wake();
        self.changed.notify_one();
    }

    /// Reads as the leader until `id`'s answer was dispatched, `deadline`, or the end (then
    /// how reading ended). Stderr is read too, so the tail is current when the call returns:
    /// the poll waits on both pipes, and an answer found before any poll is followed by one
    /// read of stderr.
    fn read_until(&self, shared: &Arc<Shared>, id: i64, deadline: Instant) -> Option<ReadEnd> {
        let mut guard = self.pipes.lock();
        let mut first = true;
        let mut answered = false;
        while !answered {
            let pipes = guard.as_mut()?;
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
                    return None;
                }
                // Rounded up, so the wait never ends just before the deadline.
                let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                pipes.step(shared, ms, &mut seen)
            };
            if step.is_some() {
                return step;
            }
        }
        None
    }

    /// Every response read: an answer to a caller that waits without leading is off the list.
    fn note(&self, id: i64) {
        self.lead.lock().answered(id);
    }

    /// Stdout ended: hand stderr to a thread of its own, and tell the sink.
    fn end(&self, mut guard: MutexGuard<'_, Option<Pipes>>, shared: &Arc<Shared>, end: ReadEnd) {
        let pipes = guard.take();
        drop(guard);
        self.lead.lock().ended();
        self.changed.notify_all();
        let Some(pipes) = pipes else {
            return;
        };
        let inbound = pipes.release(shared);
        shared.finish(end, self.max, inbound);
    }
}
