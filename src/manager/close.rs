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
use crate::error::Error;
use crate::panic::{Boundary, Faults};

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
    /// The faults injected where the manager was made (tests), carried to its threads.
    faults: Faults,
}

thread_local! {
    /// The job number of the manager thread this is (0 on any other thread).
    static CURRENT_JOB: Cell<u64> = const { Cell::new(0) };
}

impl Work {
    /// No threads yet; the ones it starts carry the faults injected on this thread (tests).
    pub(crate) fn new() -> Work {
        Work {
            faults: Faults::here(),
            ..Work::default()
        }
    }

    /// Starts `job` on a thread named `thread_name`, registered under `server` until it ends.
    /// A panic in it is caught at `at` and handed to `on_panic`, on that thread.
    pub(crate) fn spawn(
        &self,
        server: &str,
        thread_name: String,
        at: Boundary,
        job: impl FnOnce() + Send + 'static,
        on_panic: impl FnOnce(Error) + Send + 'static,
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
        let faults = self.faults.clone();
        // The job continues the trace of what started it (a host's call, a notification, the
        // end of a connection).
        let traced = crate::telemetry::Carried::here();
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                // Dropped when the job ends, however it ends: that is what waiters see.
                let _alive: Sender<()> = alive;
                let _faults = faults.enter();
                let _traced = traced.attach();
                CURRENT_JOB.with(|j| j.set(number));
                if let Err(e) = crate::panic::catch(at, job) {
                    let _ = crate::panic::catch_in(at.place(), || on_panic(e));
                }
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
            // A panic while closing is logged; the client's last clone, dropped as it unwinds,
            // closes it all the same.
            let spawned = self.work.spawn(
                &name,
                format!("mcp-{name}-close"),
                Boundary::Close,
                move || client.close(),
                |_| {},
            );
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
        work.spawn(
            "a",
            "t-a".into(),
            Boundary::Close,
            move || {
                let _ = gate.recv();
            },
            |_| {},
        )
        .unwrap();
        work.spawn("b", "t-b".into(), Boundary::Close, || {}, |_| {})
            .unwrap();
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
    fn a_panic_is_handed_over_and_the_thread_still_ends() {
        let work = Work::default();
        let (tx, rx) = crossbeam_channel::bounded(1);
        work.spawn(
            "a",
            "t-panic".into(),
            Boundary::Close,
            || panic!("a bug"),
            move |e| tx.send(e).unwrap(),
        )
        .unwrap();
        let e = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(e.to_string().contains("a bug"), "{e}");
        assert!(work.wait(None, Instant::now() + Duration::from_secs(10)));
    }

    #[test]
    fn a_thread_never_waits_for_itself() {
        let work = std::sync::Arc::new(Work::default());
        let inner = std::sync::Arc::clone(&work);
        let (tx, rx) = crossbeam_channel::bounded(1);
        work.spawn(
            "a",
            "t-self".into(),
            Boundary::Close,
            move || {
                let _ = tx.send(inner.wait(None, Instant::now() + Duration::from_secs(30)));
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
    }
}
