//! Teardown: the manager's own threads are tracked until they end, so disconnecting returns only
//! when what it stopped is gone.
//!
//! Every thread the manager starts that can hold a server process or a connection (a connect
//! task, a teardown after a failed or dead connection, a close, a tools refresh) runs through
//! [`Work::spawn`], registered under its server's name. [`Work::wait`] waits for those threads
//! to end, bounded by a deadline: `disconnect_server` waits for its server's, `disconnect_all`
//! for all of them. A connect task that is cancelled ends promptly (its `!command` is stopped,
//! its handshake abandoned, its transport closed), so waiting for it is waiting for its process
//! to be gone.
//!
//! Lock order: `Work::running` is a leaf lock; it is never held while taking the state lock,
//! spawning or waiting.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use super::Shared;
use crate::client::Client;

/// One running thread: its server, its job number, and a channel that disconnects when it ends.
struct Running {
    server: String,
    job: u64,
    ended: Receiver<()>,
}

/// The manager's running threads.
#[derive(Default)]
pub(crate) struct Work {
    running: Mutex<Vec<Running>>,
    next_job: AtomicU64,
}

thread_local! {
    /// The job number of the manager thread this is (0 on any other thread).
    static CURRENT_JOB: Cell<u64> = const { Cell::new(0) };
}

impl Work {
    /// Starts `job` on a thread named `thread_name`, registered under `server` until it ends.
    pub(crate) fn spawn(
        &self,
        server: &str,
        thread_name: String,
        job: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<()> {
        let (alive, ended) = crossbeam_channel::bounded::<()>(0);
        let number = self.next_job.fetch_add(1, Ordering::Relaxed) + 1;
        // Registered before it starts, so a wait that begins right after this call sees it.
        {
            let mut running = self.running.lock();
            running.retain(|r| is_running(&r.ended));
            running.push(Running {
                server: server.to_owned(),
                job: number,
                ended,
            });
        }
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                // Dropped when the job ends, however it ends: that is what waiters see.
                let _alive: Sender<()> = alive;
                CURRENT_JOB.with(|j| j.set(number));
                job();
            });
        if let Err(e) = spawned {
            self.running.lock().retain(|r| r.job != number);
            return Err(e);
        }
        Ok(())
    }

    /// Waits until every registered thread of `server` (of every server with `None`) has
    /// ended, or `deadline` passes. The calling thread itself is never waited for (a listener
    /// that disconnects from inside a manager thread). True when all ended.
    pub(crate) fn wait(&self, server: Option<&str>, deadline: Instant) -> bool {
        let me = CURRENT_JOB.with(Cell::get);
        let waits: Vec<Receiver<()>> = self
            .running
            .lock()
            .iter()
            .filter(|r| r.job != me && server.is_none_or(|s| s == r.server))
            .map(|r| r.ended.clone())
            .collect();
        for ended in waits {
            if let Err(RecvTimeoutError::Timeout) = ended.recv_deadline(deadline) {
                return false;
            }
        }
        true
    }
}

fn is_running(ended: &Receiver<()>) -> bool {
    !matches!(
        ended.try_recv(),
        Err(crossbeam_channel::TryRecvError::Disconnected)
    )
}

impl Shared {
    /// Closes `clients` on threads of their own (so one slow server does not hold another),
    /// registered like every manager thread.
    pub(crate) fn close_later(&self, clients: Vec<Client>) {
        for client in clients {
            let name = client.name().to_owned();
            let spawned = self
                .work
                .spawn(&name, format!("mcp-{name}-close"), move || client.close());
            if let Err(e) = spawned {
                log::warn!("[{name}] cannot start a close thread ({e}); closing here");
            }
        }
    }

    /// Closes `clients` and waits for the threads of `server` (all with `None`) to end,
    /// at most the close grace period.
    pub(crate) fn close_and_wait(&self, clients: Vec<Client>, server: Option<&str>) {
        self.close_later(clients);
        let deadline = Instant::now() + self.options.disconnect_wait;
        if !self.work.wait(server, deadline) {
            log::warn!(
                "some servers are still closing after {} ms; they finish in the background",
                self.options.disconnect_wait.as_millis()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn wait_sees_threads_end_and_is_bounded() {
        let work = Work::default();
        let (release, gate) = crossbeam_channel::bounded::<()>(0);
        work.spawn("a", "t-a".into(), move || {
            let _ = gate.recv();
        })
        .unwrap();
        work.spawn("b", "t-b".into(), || {}).unwrap();
        let soon = Instant::now() + Duration::from_secs(5);
        assert!(work.wait(Some("b"), soon), "b ends by itself");
        assert!(
            !work.wait(Some("a"), Instant::now() + Duration::from_millis(50)),
            "a is held"
        );
        drop(release);
        assert!(work.wait(None, soon), "a ends once released");
    }

    #[test]
    fn a_thread_never_waits_for_itself() {
        let work = std::sync::Arc::new(Work::default());
        let inner = std::sync::Arc::clone(&work);
        let (tx, rx) = crossbeam_channel::bounded(1);
        work.spawn("a", "t-self".into(), move || {
            let _ = tx.send(inner.wait(None, Instant::now() + Duration::from_secs(30)));
        })
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    }
}
