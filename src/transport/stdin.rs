//! Writing to a server's stdin without ever blocking the caller.
//!
//! The pipe is non-blocking. A message is written at once, by the caller, when nothing is
//! queued; whatever the pipe cannot take now (a server that stops reading) is queued, and a
//! flusher thread (`mcp-<server>-writer`, started only then) writes the queue out as the pipe
//! drains, waiting on the pipe with `poll`. Order is kept: while anything is queued, new
//! messages queue behind it. No lock is held across a blocking call.
//!
//! The writer knows which requests are in the queue: when the pipe breaks under them (the
//! server closed its stdin), each is reported lost, so its caller need not wait out its timeout.

use std::collections::VecDeque;
use std::io::{ErrorKind, Write};
use std::process::ChildStdin;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::panic::Boundary;
use crate::sleep_lock::SleepLock;

/// Told of each request whose queued bytes could not be written, and of a writer that panicked.
pub(crate) type OnLost = Box<dyn Fn(Lost) + Send + Sync>;

/// What was lost.
pub(crate) enum Lost {
    /// The queued bytes of this request.
    Request(i64),
    /// The writer itself: it panicked (the pipe is closed).
    Writer(Error),
}

/// The stdin of one server.
pub(crate) struct StdinWriter {
    name: String,
    state: SleepLock<State>,
    on_lost: OnLost,
}

struct State {
    /// `None` once closed (dropping it closes the server's stdin).
    pipe: Option<ChildStdin>,
    /// Bytes not written yet, in order.
    queued: Vec<u8>,
    /// The messages in `queued`, in order: the request id (if a request) and how many of its
    /// bytes are still queued.
    messages: VecDeque<(Option<i64>, usize)>,
    /// A flusher thread is writing `queued`.
    flushing: bool,
    /// Close the pipe once `queued` is written.
    close_when_drained: bool,
}

impl StdinWriter {
    pub(crate) fn new(name: &str, pipe: ChildStdin, on_lost: OnLost) -> Arc<StdinWriter> {
        #[cfg(unix)]
        super::process::set_nonblocking(&pipe, true);
        Arc::new(StdinWriter {
            name: name.to_owned(),
            on_lost,
            state: SleepLock::new(State {
                pipe: Some(pipe),
                queued: Vec::new(),
                messages: VecDeque::new(),
                flushing: false,
                close_when_drained: false,
            }),
        })
    }

    /// Writes `bytes` (one message; `id` if it is a request), or queues what the pipe cannot
    /// take now. Never blocks. `Ok(true)` when all of it is in the pipe, `Ok(false)` when some
    /// is queued.
    pub(crate) fn send(self: &Arc<Self>, bytes: &[u8], id: Option<i64>) -> Result<bool, Error> {
        let mut st = self.state.lock();
        if st.pipe.is_none() || st.close_when_drained {
            return Err(Error::closed("the server's stdin is closed"));
        }
        if !st.flushing && st.queued.is_empty() {
            #[allow(
                clippy::expect_used,
                reason = "checked at the top, under the same lock"
            )]
            let pipe = st.pipe.as_mut().expect("checked above");
            match write_now(pipe, bytes) {
                Ok(n) if n == bytes.len() => return Ok(true),
                Ok(n) => {
                    st.queued.extend_from_slice(&bytes[n..]);
                    st.messages.push_back((id, bytes.len() - n));
                }
                Err(e) => {
                    log::debug!("[{}] writing to the server's stdin failed: {e}", self.name);
                    st.pipe = None;
                    return Err(Error::closed("the server's stdin is closed"));
                }
            }
        } else {
            st.queued.extend_from_slice(bytes);
            st.messages.push_back((id, bytes.len()));
        }
        if !st.flushing {
            st.flushing = true;
            let (writer, failed) = (Arc::clone(self), Arc::clone(self));
            let spawned = crate::panic::spawn(
                format!("mcp-{}-writer", self.name),
                Boundary::StdioWriter,
                move || writer.flush_loop(),
                move |e| {
                    {
                        let mut st = failed.state.lock();
                        st.pipe = None;
                        st.flushing = false;
                        st.queued.clear();
                        st.messages.clear();
                    }
                    (failed.on_lost)(Lost::Writer(e));
                },
            );
            if spawned.is_err() {
                st.flushing = false;
                return Err(Error::closed("cannot start the stdin writer"));
            }
        }
        Ok(false)
    }

    /// Closes stdin: at once when nothing is queued, else once the queue is written.
    pub(crate) fn close(&self) {
        let mut st = self.state.lock();
        if st.flushing && !st.queued.is_empty() {
            st.close_when_drained = true;
        } else {
            st.pipe = None;
        }
    }

    fn flush_loop(&self) {
        loop {
            let fd = {
                let mut guard = self.state.lock();
                let st = &mut *guard;
                let Some(pipe) = st.pipe.as_mut() else {
                    // Closed by `close`: the connection is ending, and its reader fails what
                    // is still pending.
                    st.flushing = false;
                    st.queued.clear();
                    st.messages.clear();
                    return;
                };
                let queued = std::mem::take(&mut st.queued);
                match write_now(pipe, &queued) {
                    Ok(n) => {
                        st.queued = queued[n..].to_vec();
                        written(&mut st.messages, n);
                    }
                    Err(e) => {
                        log::debug!("[{}] writing to the server's stdin failed: {e}", self.name);
                        st.pipe = None;
                        st.flushing = false;
                        let lost: Vec<i64> = st.messages.drain(..).filter_map(|m| m.0).collect();
                        drop(guard);
                        // Outside the lock: the sink may take its own.
                        for id in lost {
                            (self.on_lost)(Lost::Request(id));
                        }
                        return;
                    }
                }
                if st.queued.is_empty() {
                    st.flushing = false;
                    if st.close_when_drained {
                        st.pipe = None;
                    }
                    return;
                }
                #[allow(
                    clippy::expect_used,
                    reason = "the branch above returns when it is gone"
                )]
                let pipe = st.pipe.as_ref().expect("still open");
                raw_fd(pipe)
            };
            // The pipe is full: wait (outside the lock) until it can take more. Bounded, so a
            // close that drops the pipe is noticed on the next round.
            wait_writable(fd, Duration::from_millis(100));
        }
    }
}

/// `n` more queued bytes were written: the messages they finish leave the list.
fn written(messages: &mut VecDeque<(Option<i64>, usize)>, mut n: usize) {
    while n > 0 {
        let Some(front) = messages.front_mut() else {
            return;
        };
        if front.1 > n {
            front.1 -= n;
            return;
        }
        n -= front.1;
        messages.pop_front();
    }
}

/// Writes as much of `bytes` as the pipe takes now; `Ok(written)`.
fn write_now(pipe: &mut ChildStdin, bytes: &[u8]) -> std::io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        match pipe.write(&bytes[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}

#[cfg(unix)]
type RawFd = std::os::fd::RawFd;
#[cfg(not(unix))]
type RawFd = ();

#[cfg(unix)]
fn raw_fd(pipe: &ChildStdin) -> RawFd {
    use std::os::fd::AsRawFd;
    pipe.as_raw_fd()
}

#[cfg(not(unix))]
fn raw_fd(_: &ChildStdin) -> RawFd {}

#[cfg(unix)]
fn wait_writable(fd: RawFd, at_most: Duration) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the descriptor stays open while the flusher runs (only the
    // flusher or a close under the lock drops it, and a dropped one just makes poll return).
    unsafe { libc::poll(&mut pfd, 1, at_most.as_millis() as libc::c_int) };
}

#[cfg(not(unix))]
fn wait_writable(_: RawFd, at_most: Duration) {
    std::thread::sleep(at_most.min(Duration::from_millis(5)));
}
