//! A small pool of worker threads for the HTTP transport's requests.
//!
//! A request's POST (and the SSE stream that may answer it) runs on a worker, so the caller
//! waits on its own deadline and cancel signal as with stdio, and one slow tool call never holds
//! up another. Idle workers are reused; a job that finds none starts a new one; a worker idle
//! for [`IDLE_EXIT`] exits. Dropping the pool lets every worker exit once its job is done.
//!
//! A job gets a [`Worker`] handle and calls [`Worker::done`] just before its last, quick step
//! (handing the response over): the caller it wakes usually sends the next request at once,
//! and finds this worker available instead of starting another.
//!
//! A job that panics is handed its own [`Error::Internal`] (its request fails with it) and the
//! worker goes on: a worker that had counted itself available (and may already be promised the
//! next job) must be there for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::error::Error;
use crate::panic::{Boundary, Faults};

/// How long an idle worker waits for a job before it exits.
pub(crate) const IDLE_EXIT: Duration = Duration::from_secs(30);

/// A job: what it does, what a panic in it fails, and the faults injected where it was
/// submitted (tests).
struct Job {
    work: Box<dyn FnOnce(&Worker) + Send + 'static>,
    on_panic: Box<dyn FnOnce(Error) + Send + 'static>,
    faults: Faults,
}

/// The running job's worker.
pub(crate) struct Worker {
    idle: Arc<AtomicUsize>,
    counted: std::cell::Cell<bool>,
}

impl Worker {
    /// Marks this worker available for the next job (idempotent). Call it only when what is
    /// left of the job is quick and cannot block.
    pub(crate) fn done(&self) {
        if !self.counted.replace(true) {
            self.idle.fetch_add(1, Ordering::SeqCst);
        }
    }
}

pub(crate) struct WorkerPool {
    name: String,
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    /// Workers waiting for a job and not yet promised one.
    idle: Arc<AtomicUsize>,
}

impl WorkerPool {
    pub(crate) fn new(name: &str) -> WorkerPool {
        let (jobs, queue) = crossbeam_channel::unbounded();
        WorkerPool {
            name: name.to_owned(),
            jobs,
            queue,
            idle: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Runs `job` on an idle worker, or on a new one; a panic in it is handed to `on_panic`.
    pub(crate) fn run(
        &self,
        job: impl FnOnce(&Worker) + Send + 'static,
        on_panic: impl FnOnce(Error) + Send + 'static,
    ) {
        let job = Job {
            work: Box::new(job),
            on_panic: Box::new(on_panic),
            faults: Faults::here(),
        };
        let claimed = self
            .idle
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if claimed {
            if let Err(e) = self.jobs.send(job) {
                // Cannot happen while `self` holds the receiver; run it here rather than lose it.
                let here = Worker {
                    idle: Arc::clone(&self.idle),
                    counted: std::cell::Cell::new(true),
                };
                run_job(e.into_inner(), &here);
            }
            return;
        }
        let queue = self.queue.clone();
        let idle = Arc::clone(&self.idle);
        let first = job;
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{}-http", self.name))
            .spawn(move || work(first, &queue, &idle));
        if let Err(e) = spawned {
            log::error!("[{}] cannot start an HTTP worker: {e}", self.name);
        }
    }
}

fn work(first: Job, queue: &Receiver<Job>, idle: &Arc<AtomicUsize>) {
    let worker = Worker {
        idle: Arc::clone(idle),
        counted: std::cell::Cell::new(false),
    };
    run_job(first, &worker);
    loop {
        // Available now, unless the job said so already.
        worker.done();
        match queue.recv_timeout(IDLE_EXIT) {
            // A dispatcher claimed this worker (took it off `idle`) before sending.
            Ok(job) => {
                worker.counted.set(false);
                run_job(job, &worker);
            }
            Err(RecvTimeoutError::Timeout) => {
                // Leave only if no dispatcher has claimed us meanwhile; if one has, its job is
                // on its way: wait for it.
                if idle
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok()
                {
                    return;
                }
                match queue.recv() {
                    Ok(job) => {
                        worker.counted.set(false);
                        run_job(job, &worker);
                    }
                    Err(_) => return,
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs a job; a panic in it ends the job (and fails what it served), not the worker.
fn run_job(job: Job, worker: &Worker) {
    let _faults = job.faults.enter();
    let work = job.work;
    if let Err(e) = crate::panic::catch(Boundary::HttpJob, || work(worker)) {
        let _ = crate::panic::catch_in(Boundary::HttpJob.place(), || (job.on_panic)(e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that panics after its worker counted itself available: the next job, sent to that
    /// worker, still runs (it used to go to a dead thread and be lost).
    #[test]
    fn a_job_that_panics_leaves_its_worker_for_the_next() {
        let pool = WorkerPool::new("t");
        let (tx, rx) = crossbeam_channel::unbounded();
        let first = tx.clone();
        let (failed_tx, failed) = crossbeam_channel::bounded(1);
        pool.run(
            move |worker| {
                worker.done();
                first.send(std::thread::current().id()).unwrap();
                panic!("a job's own failure");
            },
            move |e| failed_tx.send(e).unwrap(),
        );
        let panicked_on = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let e = failed.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(e.to_string().contains("a job's own failure"), "{e}");
        pool.run(
            move |_| tx.send(std::thread::current().id()).unwrap(),
            |_| {},
        );
        let next_on = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the next job ran");
        assert_eq!(next_on, panicked_on, "the same worker took it");
    }

    #[test]
    fn a_blocked_job_does_not_hold_up_the_next() {
        let pool = WorkerPool::new("t");
        let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let d1 = done_tx.clone();
        pool.run(
            move |_| {
                release_rx.recv().unwrap();
                d1.send(1).unwrap();
            },
            |_| {},
        );
        pool.run(move |_| done_tx.send(2).unwrap(), |_| {});
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)).unwrap(), 2);
        release_tx.send(()).unwrap();
        assert_eq!(done_rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
    }

    #[test]
    fn a_worker_that_says_done_takes_the_next_job() {
        let pool = WorkerPool::new("t");
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut threads = std::collections::HashSet::new();
        for _ in 0..50 {
            let tx = tx.clone();
            pool.run(
                move |worker| {
                    worker.done();
                    tx.send(std::thread::current().id()).unwrap();
                },
                |_| {},
            );
            threads.insert(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        }
        assert_eq!(threads.len(), 1, "every job ran on the first worker");
    }
}
