//! [`CancelToken`]: a cancel signal a host can clone, hand out and fire.

use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

/// A cloneable cancel signal. Firing it wakes every wait that selects on it: a pending
/// request ends with [`Error::Cancelled`](crate::Error::Cancelled) and the server is sent
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

#[derive(Debug)]
struct Inner {
    // Dropping the only sender disconnects the channel, which wakes every receiver at once.
    sender: Mutex<Option<Sender<()>>>,
    receiver: Receiver<()>,
}

impl CancelToken {
    /// A token that has not fired.
    pub fn new() -> CancelToken {
        let (sender, receiver) = crossbeam_channel::bounded(0);
        CancelToken {
            inner: Arc::new(Inner {
                sender: Mutex::new(Some(sender)),
                receiver,
            }),
        }
    }

    /// Fires the token. Idempotent.
    pub fn cancel(&self) {
        self.inner.sender.lock().take();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
