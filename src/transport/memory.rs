//! An in-memory transport pair, as rust-analyzer's `lsp-server` has `Connection::memory()`:
//! a [`Client`](crate::client::Client) on one end, plain channels of JSON-RPC messages (JSON
//! values) on the other, so the protocol (handshake, correlation, timeouts, server requests, a
//! server that goes away) is tested without a process or a socket, and a transport of the
//! host's own is a loop that moves those values between the channels and its server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;
use serde_json::Value;

use super::{Inbound, Transport};
use crate::error::Error;
use crate::jsonrpc::Message;

/// The server's end of an in-memory connection: JSON-RPC messages as JSON values.
#[derive(Debug)]
pub struct MemoryServer {
    /// What the client sends, one message each, in order. Disconnected once the client closes.
    pub receiver: Receiver<Value>,
    /// What the server sends: a message, or a batch (an array of them). Dropping it ends the
    /// connection, as a server exiting does. A value that is not JSON-RPC is dropped (logged
    /// at warn), as a stdio server's stray output is.
    pub sender: Sender<Value>,
}

/// Builds the client's end: pass it to [`Client::with_transport`](crate::client::Client::with_transport).
pub struct MemoryConnector {
    /// The client's ends, taken by the one connection made through it.
    ends: Mutex<Option<(Sender<Value>, Receiver<Value>)>>,
}

impl std::fmt::Debug for MemoryConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConnector").finish_non_exhaustive()
    }
}

/// A connected pair: the client's connector and the server's channels.
///
/// ```
/// use mcp_runtime::transport::memory_pair;
/// use mcp_runtime::{Client, ConnectOptions};
/// use serde_json::json;
///
/// let (connector, server) = memory_pair();
/// let answering = std::thread::spawn(move || {
///     while let Ok(message) = server.receiver.recv() {
///         // A request has an id and a method; notifications have no id.
///         let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
///             continue;
///         };
///         let result = match method {
///             "initialize" => json!({"protocolVersion": "2025-06-18", "capabilities": {},
///                                     "serverInfo": {"name": "mem", "version": "1"}}),
///             _ => json!({}),
///         };
///         let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
///         server.sender.send(reply).unwrap();
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
        let (reader, failed) = (Arc::clone(&shared), Arc::clone(&shared));
        crate::panic::spawn(
            format!("mcp-{name}-memory"),
            crate::panic::Boundary::StdioReader,
            move || loop {
                select! {
                    recv(from_server) -> message => match message {
                        Ok(value) => reader.deliver(&value),
                        Err(_) => {
                            reader.end(Error::closed("the server end was dropped"));
                            return;
                        }
                    },
                    recv(stopped) -> _ => return,
                }
            },
            move |e| failed.end(e),
        )
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
    /// Hands what the server sent to the client: each message of it, or nothing (and a warning)
    /// when it is not JSON-RPC.
    fn deliver(&self, value: &Value) {
        let text = serde_json::to_vec(value).unwrap_or_default();
        match Message::parse(&text) {
            Ok(messages) => {
                for message in messages {
                    self.inbound.on_message(message);
                }
            }
            Err(e) => log::warn!("memory transport: dropped what the server sent: {e}"),
        }
    }

    /// Ends the connection once, whoever notices first.
    fn end(&self, error: Error) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.inbound.on_closed(error);
        }
    }
}

/// The client's end of an in-memory connection.
pub(crate) struct MemoryTransport {
    to_server: Mutex<Option<Sender<Value>>>,
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
        let value: Value = serde_json::from_slice(&message.to_line())
            .map_err(|e| Error::protocol(format!("a message that is not JSON: {e}")))?;
        let to_server = self.to_server.lock();
        match to_server.as_ref() {
            Some(tx) if tx.send(value).is_ok() => Ok(()),
            _ => Err(Error::closed("the server end is gone")),
        }
    }

    fn close(&self) {
        self.to_server.lock().take();
        self.stop.lock().take();
        self.shared.end(Error::closed_by_owner());
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
