//! A lock for the hot paths many callers share at once (a stdio server's stdin, a caller's
//! answer): it sleeps when contended instead of yielding.
//!
//! `parking_lot`'s mutex spins, then calls `sched_yield` up to seven times before it sleeps. A
//! yielding thread stays runnable, so with eight callers on one stdio server and two CPUs the
//! callers waiting for the stdin lock took turns on the CPUs the reading thread and the server
//! needed: measured, a `sched_yield` per call and the slowest calls twice the floor's. The
//! standard library's mutex spins briefly and then sleeps on a futex, as the floor's does.
//! Everywhere else (locks held for a few instructions and rarely contended) `parking_lot`
//! stays.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A mutex that sleeps when contended; poisoning is ignored (nothing under it panics, and a
/// value left by a panic elsewhere is still consistent for its users).
pub(crate) struct SleepLock<T>(Mutex<T>);

impl<T> SleepLock<T> {
    pub(crate) const fn new(value: T) -> SleepLock<T> {
        SleepLock(Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
