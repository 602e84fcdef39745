//! [`CancelToken`]: a cancel signal a host can clone, hand out and fire.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// A cloneable cancel signal. Firing it wakes every wait that selects on it: a pending
/// request ends with [`Error::Cancelled`](crate::error::Error::Cancelled) and the server is sent
/// `notifications/cancelled`.
///
/// ```
/// let token = mcp_runtime::CancelToken::new();
/// let for_worker = token.clone();
/// token.cancel();
/// assert!(for_worker.is_cancelled());
/// ```
#[derive(Clone, Debug)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

struct Inner {
    // Dropping the only sender disconnects the channel, which wakes every receiver at once.
    sender: Mutex<Option<Sender<()>>>,
    receiver: Receiver<()>,
    /// What runs when the token fires (see [`CancelToken::on_cancel`]), by id.
    hooks: Mutex<Vec<(u64, Hook)>>,
    next_hook: std::sync::atomic::AtomicU64,
}

type Hook = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.sender.lock().is_none())
            .finish()
    }
}

/// Removes its hook from the token when dropped (see [`CancelToken::on_cancel`]).
pub(crate) struct HookGuard {
    token: CancelToken,
    id: u64,
}

impl Drop for HookGuard {
    fn drop(&mut self) {
        // Taken out under the lock, dropped outside it.
        let removed: Vec<(u64, Hook)> = {
            let mut hooks = self.token.inner.hooks.lock();
            let (gone, kept) = std::mem::take(&mut *hooks)
                .into_iter()
                .partition(|(id, _)| *id == self.id);
            *hooks = kept;
            gone
        };
        drop(removed);
    }
}

impl CancelToken {
    /// A token that has not fired.
    pub fn new() -> CancelToken {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        CancelToken {
            inner: Arc::new(Inner {
                sender: Mutex::new(Some(sender)),
                receiver,
                hooks: Mutex::new(Vec::new()),
                next_hook: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// Fires the token. Idempotent.
    pub fn cancel(&self) {
        let fired = self.inner.sender.lock().take().is_some();
        if fired {
            // Run outside every lock: a hook may do I/O (an exchange's socket is shut down).
            let hooks = std::mem::take(&mut *self.inner.hooks.lock());
            for (_, hook) in hooks {
                hook();
            }
        }
    }

    /// Runs `hook` when the token fires, on the firing thread (at once if it already fired),
    /// unless the guard is dropped first. A hook must be quick and take no lock of ours.
    pub(crate) fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> HookGuard {
        let id = self
            .inner
            .next_hook
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let guard = HookGuard {
            token: self.clone(),
            id,
        };
        {
            // Under the sender's lock, so a concurrent `cancel` either sees the hook or has
            // already fired (then it runs here).
            let sender = self.inner.sender.lock();
            if sender.is_some() {
                self.inner.hooks.lock().push((id, Box::new(hook)));
                return guard;
            }
        }
        hook();
        guard
    }

    /// Whether the token has fired.
    pub fn is_cancelled(&self) -> bool {
        self.inner.sender.lock().is_none()
    }

    /// A receiver that becomes ready (disconnected) when the token fires, for `select!`.
    pub fn receiver(&self) -> &Receiver<()> {
        &self.inner.receiver
    }
}

impl Default for CancelToken {
    fn default() -> Self {
        CancelToken::new()
    }
}

/// The longest wait any option means (a year): a host's `Duration::MAX` for "no bound" is this,
/// so no deadline computed from it (`Instant + Duration`, here or in a dependency) overflows.
pub(crate) const LONGEST_WAIT: std::time::Duration =
    std::time::Duration::from_secs(365 * 24 * 3600);

/// `d`, at most [`LONGEST_WAIT`].
pub(crate) fn capped(d: std::time::Duration) -> std::time::Duration {
    d.min(LONGEST_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hooks_run_once_on_firing_or_at_once_and_not_after_their_guard_is_gone() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let ran = Arc::new(AtomicUsize::new(0));
        let count = |ran: &Arc<AtomicUsize>| {
            let ran = Arc::clone(ran);
            move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        let token = CancelToken::new();
        let kept = token.on_cancel(count(&ran));
        drop(token.on_cancel(count(&ran)));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        token.cancel();
        token.cancel();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the dropped hook never runs");
        let _late = token.on_cancel(count(&ran));
        assert_eq!(
            ran.load(Ordering::SeqCst),
            2,
            "a hook on a fired token runs at once"
        );
        drop(kept);
    }

    #[test]
    fn firing_wakes_a_waiting_thread() {
        let token = CancelToken::new();
        let t2 = token.clone();
        let waiter = std::thread::spawn(move || {
            // A disconnected channel answers Err at once; a live one would wait out the bound.
            t2.receiver().recv_timeout(Duration::from_secs(30)).is_err() && t2.is_cancelled()
        });
        token.cancel();
        assert!(waiter.join().unwrap());
    }
}
