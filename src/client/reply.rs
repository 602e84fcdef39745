//! Where one request's outcome reaches its caller: the pending map's sending half, and the
//! caller's receiving half.
//!
//! A caller that waits for nothing but its answer (no progress, no cancel) waits on a
//! [`Waiter`]: a lock, a condition variable, and a flag saying whether anyone sleeps on it.
//! Callers that also wait on progress or a cancel select over channels, so theirs is a
//! channel.
//!
//! Why not a channel for everyone: a channel's receive spins and then *yields* the CPU a few
//! times before it sleeps. With many callers on one connection and two CPUs, the yielding
//! callers stay runnable and take turns on the CPUs the reading thread and the server need:
//! measured with eight callers on one stdio server, two `sched_yield`s per call, the reader
//! scheduled late, and a p99 latency twice the floor's. A waiter sleeps at once (the lock's
//! own brief spin aside, the standard library's never yields), and its answer costs a wake-up
//! only when the caller already sleeps.

use std::sync::{Arc, Condvar, MutexGuard, PoisonError};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde_json::value::RawValue;

use crate::error::Error;
use crate::sleep_lock::SleepLock;

/// A request's outcome: its result as the JSON text it came as, or why it failed.
pub(crate) type Outcome = Result<Box<RawValue>, Error>;

/// What a [`Waiter`] holds.
enum Held {
    /// Nothing yet.
    Empty,
    /// The outcome, not taken yet.
    Full(Outcome),
    /// Taken, or the sending half was dropped without sending (the connection went away).
    Gone,
}

/// One caller's answer, handed over under a lock (`.1`: the caller sleeps on `ready`).
pub(crate) struct Waiter {
    held: SleepLock<(Held, bool)>,
    ready: Condvar,
}

impl Waiter {
    fn lock(&self) -> MutexGuard<'_, (Held, bool)> {
        self.held.lock()
    }

    /// Puts `outcome` (or, with `None`, the news that none will come) and wakes the caller if
    /// it sleeps.
    fn put(&self, outcome: Option<Outcome>) {
        let mut held = self.lock();
        if !matches!(held.0, Held::Empty) {
            return;
        }
        held.0 = outcome.map_or(Held::Gone, Held::Full);
        let sleeping = held.1;
        drop(held);
        if sleeping {
            self.ready.notify_one();
        }
    }

    fn take(held: &mut Held) -> Option<Result<Outcome, RecvTimeoutError>> {
        match std::mem::replace(held, Held::Gone) {
            Held::Full(outcome) => Some(Ok(outcome)),
            Held::Gone => Some(Err(RecvTimeoutError::Disconnected)),
            Held::Empty => {
                *held = Held::Empty;
                None
            }
        }
    }
}

/// The sending half, kept in the pending map until the outcome is known.
pub(crate) enum ReplyTx {
    /// To a caller waiting on a [`Waiter`] (dropped unsent, the caller hears "disconnected").
    Waiter(WaiterTx),
    /// To a caller selecting over channels.
    Channel(Sender<Outcome>),
}

/// A [`Waiter`]'s sending half.
pub(crate) struct WaiterTx(Arc<Waiter>);

impl Drop for WaiterTx {
    fn drop(&mut self) {
        // A no-op after a send.
        self.0.put(None);
    }
}

impl ReplyTx {
    /// Hands the outcome over (a caller that left is not an error).
    pub(crate) fn send(self, outcome: Outcome) {
        match self {
            ReplyTx::Waiter(w) => w.0.put(Some(outcome)),
            ReplyTx::Channel(tx) => {
                let _ = tx.send(outcome);
            }
        }
    }
}

/// The receiving half, the caller's.
pub(crate) enum ReplyRx {
    /// See [`ReplyTx::Waiter`].
    Waiter(Arc<Waiter>),
    /// See [`ReplyTx::Channel`].
    Channel(Receiver<Outcome>),
}

/// A pair: a waiter when the caller waits for nothing else (`alone`), a channel otherwise.
pub(crate) fn pair(alone: bool) -> (ReplyTx, ReplyRx) {
    if alone {
        let w = Arc::new(Waiter {
            held: SleepLock::new((Held::Empty, false)),
            ready: Condvar::new(),
        });
        (
            ReplyTx::Waiter(WaiterTx(Arc::clone(&w))),
            ReplyRx::Waiter(w),
        )
    } else {
        let (tx, rx) = crossbeam_channel::bounded(1);
        (ReplyTx::Channel(tx), ReplyRx::Channel(rx))
    }
}

impl ReplyRx {
    /// The outcome if it is there (`None`: not yet, or none will come).
    pub(crate) fn try_recv(&self) -> Option<Outcome> {
        match self {
            ReplyRx::Waiter(w) => Waiter::take(&mut w.lock().0).and_then(Result::ok),
            ReplyRx::Channel(rx) => rx.try_recv().ok(),
        }
    }

    /// Waits for the outcome until `deadline`.
    pub(crate) fn recv_until(&self, deadline: Instant) -> Result<Outcome, RecvTimeoutError> {
        self.wait(Some(deadline))
    }

    /// Waits for the outcome as long as it takes: for a request the connection's end bounds
    /// (it fails every pending request). `Err` when none will come.
    pub(crate) fn recv(&self) -> Result<Outcome, RecvTimeoutError> {
        self.wait(None)
    }

    fn wait(&self, deadline: Option<Instant>) -> Result<Outcome, RecvTimeoutError> {
        let w = match (self, deadline) {
            (ReplyRx::Channel(rx), Some(deadline)) => return rx.recv_deadline(deadline),
            (ReplyRx::Channel(rx), None) => {
                return rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            }
            (ReplyRx::Waiter(w), _) => w,
        };
        let mut held = w.lock();
        loop {
            if let Some(taken) = Waiter::take(&mut held.0) {
                return taken;
            }
            held.1 = true;
            held = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        held.1 = false;
                        return Err(RecvTimeoutError::Timeout);
                    }
                    w.ready
                        .wait_timeout(held, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => w.ready.wait(held).unwrap_or_else(PoisonError::into_inner),
            };
            held.1 = false;
        }
    }

    /// The channel to select on (callers that wait on more than their answer).
    pub(crate) fn channel(&self) -> Option<&Receiver<Outcome>> {
        match self {
            ReplyRx::Channel(rx) => Some(rx),
            ReplyRx::Waiter(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ok(text: &str) -> Outcome {
        Ok(RawValue::from_string(text.to_owned()).unwrap())
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[test]
    fn a_waiter_gets_an_outcome_sent_before_it_waits() {
        let (tx, rx) = pair(true);
        tx.send(ok("1"));
        assert_eq!(rx.recv_until(soon()).unwrap().unwrap().get(), "1");
        // Taken once.
        assert!(rx.try_recv().is_none());
    }

    #[test]
    fn a_sleeping_waiter_is_woken_by_the_outcome() {
        let (tx, rx) = pair(true);
        let ReplyRx::Waiter(w) = &rx else {
            unreachable!()
        };
        let w = Arc::clone(w);
        let sender = std::thread::spawn(move || {
            // Send once the caller sleeps (or after a while, so a waiter that never sleeps
            // fails the test instead of hanging it).
            let until = Instant::now() + Duration::from_secs(5);
            while !w.lock().1 && Instant::now() < until {
                std::thread::yield_now();
            }
            tx.send(ok("2"));
        });
        assert_eq!(rx.recv_until(soon()).unwrap().unwrap().get(), "2");
        sender.join().unwrap();
    }

    #[test]
    fn a_sending_half_dropped_unsent_is_a_disconnection_not_a_timeout() {
        for alone in [true, false] {
            let (tx, rx) = pair(alone);
            drop(tx);
            assert!(matches!(
                rx.recv_until(soon()),
                Err(RecvTimeoutError::Disconnected)
            ));
        }
    }

    #[test]
    fn a_waiter_past_its_deadline_times_out_and_still_takes_a_late_outcome() {
        let (tx, rx) = pair(true);
        let past = Instant::now();
        assert!(matches!(
            rx.recv_until(past),
            Err(RecvTimeoutError::Timeout)
        ));
        tx.send(ok("3"));
        assert_eq!(rx.try_recv().unwrap().unwrap().get(), "3");
    }

    #[test]
    fn try_recv_sees_nothing_before_the_send_and_only_a_waiter_has_no_channel() {
        let (tx, rx) = pair(true);
        assert!(rx.try_recv().is_none());
        assert!(rx.channel().is_none());
        tx.send(ok("4"));
        assert!(rx.try_recv().is_some());
        let (_tx, rx) = pair(false);
        assert!(rx.channel().is_some());
    }
}
