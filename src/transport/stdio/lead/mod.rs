//! Who reads a stdio server's output, as a plain value: the io thread, or a caller reading its
//! own answer (the *leader*). No I/O and no locking here: [`Lead`] lives in the reader's `lead`
//! mutex, each transition is a method that returns what the thread must do next (read, wait
//! until, wake the io thread, tear down), and the reader does it.
//!
//! | state | event | next state | what to do |
//! |---|---|---|---|
//! | `Parked` | a call that may lead ([`Lead::call`]), no contention for [`LINGER`] | `Leader` | [`Call::Lead`]: the caller reads |
//! | `Parked` | a call that may lead, contention within [`LINGER`] | `Parked`, resume | listed; [`Call::Wait`] wakes the io thread, which reads as if that call had asked to lead |
//! | `Parked` | a call that may not lead | `Parked`, resume | listed; [`Call::Wait`] wakes the io thread |
//! | `Parked` | [`Lead::io_turn`], resume asked or [`LINGER`] over | `Io` | [`IoTurn::Read`] |
//! | `Parked` | [`Lead::io_turn`] otherwise | `Parked` | [`IoTurn::Wait`] until [`LINGER`] after `since` |
//! | `Leader` | any call | `Leader` | listed: the leader reads its answer, or hands over when it leaves |
//! | `Leader` | [`Lead::io_turn`] | `Leader` | [`IoTurn::Wait`] one [`LINGER`] (a leader that leaves wakes nobody unless needed) |
//! | `Leader` | [`Lead::leader_leaves`], stdout goes on | `Parked` since now | resume (and wake) if anyone listed still waits |
//! | `Leader` | [`Lead::leader_leaves`], stdout ended | `Ending` | wake: the io thread tears down |
//! | `Io` | any call | `Io` | listed; one that may lead asks to lead |
//! | `Io` | [`Lead::io_read`], lead asked, nobody waiting, no contention for [`LINGER`] | `Parked` since now | the io thread parks |
//! | `Ending` | [`Lead::io_turn`] | `Io` | [`IoTurn::End`] with how reading ended |
//! | `Ending`, `Ended` | any call | unchanged | [`Call::Ending`]: not listed, the end fails it |
//! | any | [`Lead::wake`] (close) | unchanged, resume | the io thread reads as soon as nobody leads |
//! | any | [`Lead::ended`] | `Ended` | |
//! | `Ended` | [`Lead::io_turn`] | `Ended` | [`IoTurn::Stop`] |
//!
//! "Listed" callers wait for their answer without reading: while any of them waits (until its
//! deadline), the io thread does not park, and a leader that leaves hands over to it. A
//! response read for one of them takes it off the list ([`Lead::answered`]).
//!
//! The io thread parks only after a caller asked to lead while it was reading: a caller that
//! finds it reading does not wait for it to park, it is listed and answered by it.
//!
//! *Contention*: a call listed while another is in flight (under a leader, or beside other
//! listed callers). Leading saves a sequential caller a thread hop, but among concurrent
//! callers it costs the others: whoever is listed under a leader whose own answer comes first
//! waits for the io thread to be woken and scheduled, on a busy machine the slowest step of a
//! call. So after contention the io thread reads on, and parks only once [`LINGER`] has passed
//! without any; and a call that finds it parked that soon after contention (a leader that
//! answered everyone parked it) is listed and wakes it rather than leading. Concurrent callers
//! are all answered by one reader, as the floor's are, and a caller alone leads again soon
//! after.

use std::time::{Duration, Instant};

use super::pipes::ReadEnd;

/// How long the io thread stays parked after the last leader left.
pub(super) const LINGER: Duration = Duration::from_millis(20);

/// How many callers may be listed before those past their deadline are dropped (at the next
/// call that is listed; otherwise when the list is consulted).
const PRUNE_AT: usize = 64;

/// Who reads.
#[derive(Debug)]
enum Who {
    /// The io thread reads. `lead_wanted`: a caller that could have led found it reading, so
    /// it parks at its next chance (when nobody listed waits).
    Io { lead_wanted: bool },
    /// The io thread is parked and nobody reads, since the last leader left (or the start).
    /// `lead_wanted`: a caller that could have led was listed instead, right after contention;
    /// the io thread reads on as [`Who::Io`] with it, and so parks again at its next chance.
    Parked { since: Instant, lead_wanted: bool },
    /// A caller reads for itself; the io thread is parked.
    Leader,
    /// A leader saw stdout end: the io thread tears down (which may take the close's grace
    /// periods, not the caller's time).
    Ending(ReadEnd),
    /// Reading is over.
    Ended,
}

impl Who {
    /// Parked since `now`, nobody having asked to lead.
    fn parked(since: Instant) -> Who {
        Who::Parked {
            since,
            lead_wanted: false,
        }
    }
}

/// The leading state of one stdio server.
#[derive(Debug)]
pub(super) struct Lead {
    who: Who,
    /// The io thread must read again as soon as nobody leads (a listed caller waits, or close).
    resume: bool,
    /// The listed callers: (request id, until when its caller waits).
    waiting: Vec<(i64, Instant)>,
    /// When a call was last listed while another was in flight (see the module's
    /// *contention*): the io thread does not park until [`LINGER`] after it.
    contended: Option<Instant>,
}

/// What the io thread does next ([`Lead::io_turn`]).
#[derive(Debug)]
pub(super) enum IoTurn {
    /// Read (wait on the pipes without a timeout).
    Read,
    /// Wait on the condition variable until then (or a wake-up), and ask again.
    Wait(Instant),
    /// A leader saw stdout end this way: tear down.
    End(ReadEnd),
    /// Reading is over: the thread returns.
    Stop,
}

/// How a caller's request is read ([`Lead::call`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Call {
    /// The caller leads: it reads its own answer.
    Lead,
    /// The caller is listed and waits for the io thread (or the current leader) to read its
    /// answer; `wake_io`: wake the parked io thread.
    Wait {
        /// Notify the io thread now.
        wake_io: bool,
    },
    /// Reading is ending: the caller is not listed (the end fails its request).
    Ending,
}

impl Lead {
    /// The start: parked, as if a leader had just left. The handshake's first request (on the
    /// connecting thread) reads its own answer too; if nobody leads, the io thread reads
    /// [`LINGER`] after `now`.
    pub(super) fn new(now: Instant) -> Lead {
        Lead {
            who: Who::parked(now),
            resume: false,
            waiting: Vec::new(),
            contended: None,
        }
    }

    /// Leader election: a caller sends request `id` and waits until `deadline`; `inline` when
    /// it needs neither cancellation nor progress. It leads when the io thread is parked,
    /// nobody leads, and no contention came within [`LINGER`]. `now` is read at most once:
    /// for a call listed while another is in flight (the contention's time, and to drop
    /// expired entries from a long list), and for a call that may lead once contention was
    /// seen (to tell whether it is over).
    pub(super) fn call(
        &mut self,
        id: i64,
        deadline: Instant,
        inline: bool,
        now: impl FnOnce() -> Instant,
    ) -> Call {
        let mut clock = Clock::new(now);
        match &mut self.who {
            Who::Ending(_) | Who::Ended => return Call::Ending,
            Who::Parked { lead_wanted, .. } if inline => {
                // Right after contention the io thread reads, as it would had it not parked
                // (a leader that answered everyone parked it): listed, not elected.
                let recent = self
                    .contended
                    .is_some_and(|at| clock.now().saturating_duration_since(at) < LINGER);
                if !recent {
                    self.contended = None;
                    self.who = Who::Leader;
                    return Call::Lead;
                }
                *lead_wanted = true;
            }
            _ => {}
        }
        if matches!(self.who, Who::Leader) || !self.waiting.is_empty() {
            let now = clock.now();
            self.contended = Some(now);
            if self.waiting.len() >= PRUNE_AT {
                // Answers that never came (their callers gave up) leave with their deadline.
                self.prune(now);
            }
        }
        self.waiting.push((id, deadline));
        match &mut self.who {
            Who::Io { lead_wanted } => {
                *lead_wanted |= inline;
                Call::Wait { wake_io: false }
            }
            Who::Parked { .. } => {
                self.resume = true;
                Call::Wait { wake_io: true }
            }
            // The leader reads this answer, or wakes the io thread when it leaves first.
            _ => Call::Wait { wake_io: false },
        }
    }

    /// Handing over: the leader is done at `now`. `end`: it saw stdout end. `unsent`: its
    /// request is still queued for stdin (so it did not read), and its answer is the io
    /// thread's to read. True when the io thread must be woken.
    pub(super) fn leader_leaves(
        &mut self,
        now: Instant,
        end: Option<ReadEnd>,
        unsent: Option<(i64, Instant)>,
    ) -> bool {
        debug_assert!(matches!(self.who, Who::Leader), "{:?}", self.who);
        let ending = end.is_some();
        self.who = match end {
            Some(end) => Who::Ending(end),
            None => Who::parked(now),
        };
        if let Some(entry) = unsent {
            self.waiting.push(entry);
        }
        if self.anyone_waiting(now) {
            self.resume = true;
        }
        self.resume || ending
    }

    /// The io thread asks what to do (at its start, and after each wait). Linger: parked, it
    /// reads again once resume is asked or [`LINGER`] has passed since the last leader left.
    /// `now` is read only when parked or led.
    pub(super) fn io_turn(&mut self, now: impl FnOnce() -> Instant) -> IoTurn {
        match &self.who {
            Who::Ended => IoTurn::Stop,
            Who::Io { .. } => IoTurn::Read,
            // Never while a caller leads: its answer is its own to read. A leader that leaves
            // does not wake us unless someone waits (that would cost every call a wake-up),
            // so while one leads we look again every `LINGER`.
            Who::Leader => IoTurn::Wait(now() + LINGER),
            Who::Ending(_) => {
                self.resume = false;
                let Who::Ending(end) =
                    std::mem::replace(&mut self.who, Who::Io { lead_wanted: false })
                else {
                    unreachable!("matched above")
                };
                IoTurn::End(end)
            }
            Who::Parked { since, lead_wanted } => {
                let (since, lead_wanted) = (*since, *lead_wanted);
                if self.resume || now().saturating_duration_since(since) >= LINGER {
                    self.resume = false;
                    self.who = Who::Io { lead_wanted };
                    IoTurn::Read
                } else {
                    IoTurn::Wait(since + LINGER)
                }
            }
        }
    }

    /// Parking: the io thread handled what one wait brought. It parks when a caller asked to
    /// lead meanwhile, nobody listed still waits, and no call met another for [`LINGER`].
    /// `now` is read only when a caller asked to lead.
    pub(super) fn io_read(&mut self, now: impl FnOnce() -> Instant) {
        if let Who::Io { lead_wanted: true } = self.who {
            let now = now();
            let calm = self
                .contended
                .is_none_or(|at| now.saturating_duration_since(at) >= LINGER);
            if calm && !self.anyone_waiting(now) {
                self.who = Who::parked(now);
            }
        }
    }

    /// A response to `id` was read: its caller (if listed) is off the list.
    pub(super) fn answered(&mut self, id: i64) {
        if let Some(i) = self.waiting.iter().position(|(w, _)| *w == id) {
            self.waiting.swap_remove(i);
        }
    }

    /// Close: the io thread must read again (it sees the end) as soon as nobody leads.
    pub(super) fn wake(&mut self) {
        self.resume = true;
    }

    /// Shutdown: reading is over (the io thread took the pipes to tear down).
    pub(super) fn ended(&mut self) {
        self.who = Who::Ended;
    }

    /// Whether a listed caller still waits at `now` (dropping those past their deadline).
    fn anyone_waiting(&mut self, now: Instant) -> bool {
        if self.waiting.is_empty() {
            return false;
        }
        self.prune(now);
        !self.waiting.is_empty()
    }

    fn prune(&mut self, now: Instant) {
        self.waiting.retain(|(_, until)| *until > now);
    }
}

/// The clock of one transition: read at most once, and only if asked.
struct Clock<F> {
    read: Option<F>,
    at: Option<Instant>,
}

impl<F: FnOnce() -> Instant> Clock<F> {
    fn new(read: F) -> Clock<F> {
        Clock {
            read: Some(read),
            at: None,
        }
    }

    fn now(&mut self) -> Instant {
        match (self.at, self.read.take()) {
            (Some(at), _) => at,
            (None, read) => *self
                .at
                .insert(read.map_or_else(Instant::now, |read| read())),
        }
    }
}

#[cfg(test)]
mod tests;
