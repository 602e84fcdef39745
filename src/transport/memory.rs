//! An in-memory transport pair, as rust-analyzer's `lsp-server` has `Connection::memory()`:
//! a [`Client`](crate::client::Client) on one end, plain channels of [`Message`]s on the other, so the
//! protocol (handshake, correlation, timeouts, server requests, a server that goes away) is
//! tested without a process or a socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;

use super::{Inbound, Transport};
use crate::error::Error;
use crate::jsonrpc::Message;

/// The server's end of an in-memory connection.
#[derive(Debug)]
pub struct MemoryServer {
    /// What the client sends, in order. Disconnected once the client closes.
    pub receiver: Receiver<Message>,
    /// What the server sends. Dropping it ends the connection, as a server exiting does.
    pub sender: Sender<Message>,
}

/// Builds the client's end: pass it to [`Client::with_transport`](crate::client::Client::with_transport).
pub struct MemoryConnector {
    /// The client's ends, taken by the one connection made through it.
    ends: Mutex<Option<(Sender<Message>, Receiver<Message>)>>,
}

impl std::fmt::Debug for MemoryConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConnector").finish_non_exhaustive()
    }
}

/// A connected pair: the client's connector and the server's channels.
///
/// ```
/// use mcp_runtime::protocol::Message;
/// use mcp_runtime::transport::memory_pair;
/// use mcp_runtime::{Client, ConnectOptions};
/// use serde_json::json;
///
/// let (connector, server) = memory_pair();
/// let answering = std::thread::spawn(move || {
///     while let Ok(message) = server.receiver.recv() {
///         if let Message::Request(request) = message {
///             let result = match request.method.as_str() {
///                 "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {},
///                                         "serverInfo": {"name": "mem", "version": "1"}}),
///                 _ => json!({}),
///             };
///             server.sender.send(Message::result(request.id, result)).unwrap();
///         }
///     }
/// });
/// let client = Client::with_transport("mem", connector, ConnectOptions::default())?;
/// assert_eq!(client.server_info().name, "mem");
/// client.close();
/// answering.join().unwrap();
/// # Ok::<(), mcp_runtime::Error>(())
/// ```
pub fn pair() -> (MemoryConnector, MemoryServer) {
    let (to_server, receiver) = crossbeam_channel::unbounded();
    let (sender, from_server) = crossbeam_channel::unbounded();
    (
        MemoryConnector {
            ends: Mutex::new(Some((to_server, from_server))),
        },
        MemoryServer { receiver, sender },
    )
}

impl MemoryConnector {
    /// The transport, delivering to `inbound` on a reader thread of its own. A connector
    /// connects once: the pair has one server end.
    pub(crate) fn transport(
        &self,
        name: &str,
        inbound: Arc<dyn Inbound>,
    ) -> Result<MemoryTransport, Error> {
        let (to_server, from_server) = self
            .ends
            .lock()
            .take()
            .ok_or_else(|| Error::closed("this in-memory pair was already connected"))?;
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let shared = Arc::new(Shared {
            inbound,
            closed: AtomicBool::new(false),
        });
        let reader = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("mcp-{name}-memory"))
            .spawn(move || loop {
                select! {
                    recv(from_server) -> message => match message {
                        Ok(message) => reader.inbound.on_message(message),
                        Err(_) => {
                            reader.end(Error::closed("the server end was dropped"));
                            return;
                        }
                    },
                    recv(stopped) -> _ => return,
                }
            })
            .map_err(|e| Error::io("cannot start the memory transport's reader", e))?;
        Ok(MemoryTransport {
            to_server: Mutex::new(Some(to_server)),
            stop: Mutex::new(Some(stop)),
            shared,
        })
    }
}

struct Shared {
    inbound: Arc<dyn Inbound>,
    closed: AtomicBool,
}

impl Shared {
    /// Ends the connection once, whoever notices first.
    fn end(&self, error: Error) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.inbound.on_closed(error);
        }
    }
}

/// The client's end of an in-memory connection.
pub(crate) struct MemoryTransport {
    to_server: Mutex<Option<Sender<Message>>>,
    stop: Mutex<Option<Sender<()>>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MemoryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTransport")
            .field("closed", &self.shared.closed.load(Ordering::SeqCst))
            .finish()
    }
}

impl Transport for MemoryTransport {
    fn send(&self, message: &Message, _: &super::Envelope) -> Result<(), Error> {
        let to_server = self.to_server.lock();
        match to_server.as_ref() {
            Some(tx) if tx.send(message.clone()).is_ok() => Ok(()),
            _ => Err(Error::closed("the server end is gone")),
        }
    }

    fn close(&self) {
        self.to_server.lock().take();
        self.stop.lock().take();
        self.shared.end(Error::closed("the connection was closed"));
    }

    fn kind(&self) -> &'static str {
        "memory"
    }
}

impl Drop for MemoryTransport {
    fn drop(&mut self) {
        self.close();
    }
}
