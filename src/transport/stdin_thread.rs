//! Writing to a server's stdin without ever blocking the caller, where pipes cannot be made
//! non-blocking (Windows): a thread per server (`mcp-<server>-writer`) owns the pipe and writes
//! the messages in order, with blocking writes; callers only queue. The same interface as the
//! Unix writer (`stdin.rs`).
//!
//! Close: the queue is written out, then the pipe is closed (the server sees end of file). A
//! server that stops reading leaves the thread in a write until the teardown ends the server,
//! which breaks the pipe.
//!
//! When the pipe breaks (the server closed its stdin), each request still queued or being
//! written is reported lost, so its caller need not wait out its timeout.

use std::io::Write;
use std::process::ChildStdin;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::Mutex;

use crate::error::Error;

/// Told of each request whose bytes could not be written, and of a writer that panicked.
pub(crate) type OnLost = Box<dyn Fn(Lost) + Send + Sync>;

/// What was lost.
pub(crate) enum Lost {
    /// The bytes of this request.
    Request(i64),
    /// The writer itself: it panicked (the pipe is closed).
    Writer(Error),
}

/// One message's bytes, and its id if it is a request.
type Queued = (Vec<u8>, Option<i64>);

/// The stdin of one server.
pub(crate) struct StdinWriter {
    /// `None` once closed; dropping the sender lets the thread finish the queue and close.
    queue: Mutex<Option<Sender<Queued>>>,
}

impl StdinWriter {
    /// Starts the writer thread (if it cannot start, the pipe is closed at once and every send
    /// fails).
    pub(crate) fn new(name: &str, pipe: ChildStdin, on_lost: OnLost) -> Arc<StdinWriter> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let server = name.to_owned();
        let on_lost = Arc::new(on_lost);
        let failed = Arc::clone(&on_lost);
        let started = crate::panic::spawn(
            format!("mcp-{name}-writer"),
            crate::panic::Boundary::StdioWriter,
            move || write_loop(&server, pipe, &rx, &on_lost),
            move |e| failed(Lost::Writer(e)),
        );
        Arc::new(StdinWriter {
            queue: Mutex::new(started.is_ok().then_some(tx)),
        })
    }

    /// Queues `bytes` (one message; `id` if it is a request). Never blocks. `Ok(false)`: the
    /// bytes are queued, not yet known to be in the pipe.
    pub(crate) fn send(self: &Arc<Self>, bytes: &[u8], id: Option<i64>) -> Result<bool, Error> {
        let queue = self.queue.lock();
        match queue.as_ref().map(|tx| tx.send((bytes.to_vec(), id))) {
            Some(Ok(())) => Ok(false),
            _ => Err(Error::closed("the server's stdin is closed")),
        }
    }

    /// Closes stdin once whatever is queued is written.
    pub(crate) fn close(&self) {
        self.queue.lock().take();
    }
}

fn write_loop(name: &str, mut pipe: ChildStdin, queue: &Receiver<Queued>, on_lost: &OnLost) {
    while let Ok((bytes, id)) = queue.recv() {
        if let Err(e) = pipe.write_all(&bytes).and_then(|()| pipe.flush()) {
            log::debug!("[{name}] writing to the server's stdin failed: {e}");
            drop(pipe);
            // This message and every one queued behind it are lost; later sends fail when
            // the connection's reader sees the end.
            let lost = id.into_iter().chain(queue.try_iter().filter_map(|m| m.1));
            for id in lost {
                on_lost(Lost::Request(id));
            }
            return;
        }
    }
}
