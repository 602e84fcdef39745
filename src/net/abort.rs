//! Ending one HTTP exchange's I/O from another thread.
//!
//! A request that runs on a worker (its caller waits with a progress callback), or on a
//! cancellable caller's own thread, may block in a read for as long as its stream is silent.
//! When its caller gives up (timeout or cancel: the client then sends
//! `notifications/cancelled`), or its cancel signal fires, [`Abort::abort`] runs: the socket the exchange is blocked on is shut down, so the read returns at
//! once, and every later I/O step of the exchange fails.
//!
//! The exchange's thread runs inside [`Abort::scope`]; the TCP layer (`tcp`) calls [`watch`]
//! around each blocking step, which is a no-op outside a scope (the callers that run their own
//! exchange inline are bounded by their deadline instead). A socket is registered only while a
//! step runs on it, so a kept-alive connection that went back to the pool is never touched.

use std::cell::RefCell;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::cancel::CancelToken;

/// One exchange's abort switch.
#[derive(Default)]
pub(crate) struct Abort {
    token: CancelToken,
    /// The socket a step of the exchange is blocked on right now.
    socket: Mutex<Option<Arc<super::socket::Socket>>>,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Abort>>> = const { RefCell::new(None) };
}

impl Abort {
    /// Ends the exchange's I/O: the current step fails now, the next ones at once.
    pub(crate) fn abort(&self) {
        self.token.cancel();
        // Taken out under the lock, shut down outside it.
        let socket = self.socket.lock().clone();
        if let Some(s) = socket {
            s.shut();
        }
    }

    /// Whether the exchange was aborted.
    pub(crate) fn is_aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Fires (disconnects) when the exchange is aborted: for waits between steps.
    pub(crate) fn token(&self) -> &CancelToken {
        &self.token
    }

    /// Runs `f` (an exchange) with this switch as the thread's current one.
    pub(crate) fn scope<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        with_current(Some(Arc::clone(self)), f)
    }
}

/// Runs `f` with `current` as the thread's current exchange (none: outside any), and puts the
/// one before it back afterwards, even if `f` panics.
fn with_current<R>(current: Option<Arc<Abort>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Abort>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(current)));
    f()
}

/// Runs `f` outside any exchange's scope: its I/O is bounded by its own deadline, and no
/// exchange's abort ends it (an OAuth refresh run while a request waits for a new
/// authorization must not be cut halfway by that request's cancel: a rotated refresh token
/// would be lost).
#[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's only.
pub(crate) fn detached<R>(f: impl FnOnce() -> R) -> R {
    with_current(None, f)
}

/// While alive, the current exchange's blocking step runs on `socket`.
pub(crate) struct Watched(Option<Arc<Abort>>);

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(a) = &self.0 {
            *a.socket.lock() = None;
        }
    }
}

/// Registers `socket` with the thread's current exchange for one blocking step; fails if the
/// exchange was aborted. Outside an exchange's scope it does nothing.
pub(crate) fn watch(socket: &Arc<super::socket::Socket>) -> Result<Watched, ureq::Error> {
    let current = CURRENT.with(|c| c.borrow().clone());
    let Some(abort) = current else {
        return Ok(Watched(None));
    };
    *abort.socket.lock() = Some(Arc::clone(socket));
    // `abort` sets the token before it looks at the socket: either it sees this socket, or we
    // see the token here.
    if abort.is_aborted() {
        *abort.socket.lock() = None;
        return Err(aborted());
    }
    Ok(Watched(Some(abort)))
}

/// The error an aborted exchange's I/O fails with.
pub(crate) fn aborted() -> ureq::Error {
    ureq::Error::Io(std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "the request ended",
    ))
}
