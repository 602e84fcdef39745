//! The host's [`ClientHandler`] behind a catch: a method that panics is logged and answers as
//! a handler that failed would (a server's request gets a JSON-RPC error, a notification is
//! dropped), and the connection stays. Every connection's handler is wrapped in this.

use std::sync::Arc;

use serde_json::Value;

use super::handler::ClientHandler;
use crate::error::Error;
use crate::jsonrpc::{codes, RpcError};
use crate::panic::catch_in;
use crate::protocol::{ClientCapabilities, LoggingLevel, Root};

/// The host's handler, each call caught.
pub(crate) struct CaughtHandler(pub(crate) Arc<dyn ClientHandler>);

impl CaughtHandler {
    /// `handler`, wrapped (once).
    pub(crate) fn wrap(handler: Arc<dyn ClientHandler>) -> Arc<dyn ClientHandler> {
        Arc::new(CaughtHandler(handler))
    }
}

/// `f`'s answer, or its panic (at `place`) as an `-32603` error.
fn answer<T>(place: &str, f: impl FnOnce() -> Result<T, RpcError>) -> Result<T, RpcError> {
    catch_in(place, f).unwrap_or_else(|e| Err(RpcError::new(codes::INTERNAL_ERROR, e.to_string())))
}

/// Runs a notification's callback; a panic (at `place`) is logged.
fn told(place: &str, f: impl FnOnce()) {
    let _ = catch_in(place, f);
}

impl ClientHandler for CaughtHandler {
    fn capabilities(&self) -> ClientCapabilities {
        catch_in("the ClientHandler's capabilities", || self.0.capabilities()).unwrap_or_default()
    }

    fn list_roots(&self, server: &str) -> Result<Vec<Root>, RpcError> {
        answer("the ClientHandler's list_roots", || {
            self.0.list_roots(server)
        })
    }

    fn create_message(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        answer("the ClientHandler's create_message", || {
            self.0.create_message(server, params)
        })
    }

    fn elicit(&self, server: &str, params: Value) -> Result<Value, RpcError> {
        answer("the ClientHandler's elicit", || {
            self.0.elicit(server, params)
        })
    }

    fn on_tools_list_changed(&self, server: &str) {
        told("the ClientHandler's on_tools_list_changed", || {
            self.0.on_tools_list_changed(server)
        });
    }

    fn on_session_reinitialized(&self, server: &str) {
        told("the ClientHandler's on_session_reinitialized", || {
            self.0.on_session_reinitialized(server)
        });
    }

    fn on_log_message(
        &self,
        server: &str,
        level: LoggingLevel,
        logger: Option<&str>,
        data: &Value,
    ) {
        told("the ClientHandler's on_log_message", || {
            self.0.on_log_message(server, level, logger, data)
        });
    }

    fn on_notification(&self, server: &str, method: &str, params: Option<&Value>) {
        told("the ClientHandler's on_notification", || {
            self.0.on_notification(server, method, params)
        });
    }

    fn trace_context(&self, server: &str) -> Option<serde_json::Map<String, Value>> {
        catch_in("the ClientHandler's trace_context", || {
            self.0.trace_context(server)
        })
        .unwrap_or_default()
    }

    fn on_connection_closed(&self, server: &str, reason: &Error) {
        told("the ClientHandler's on_connection_closed", || {
            self.0.on_connection_closed(server, reason)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;

    impl ClientHandler for Panics {
        fn capabilities(&self) -> ClientCapabilities {
            panic!("capabilities")
        }
        fn create_message(&self, _: &str, _: Value) -> Result<Value, RpcError> {
            panic!("sampling failed")
        }
        fn on_notification(&self, _: &str, _: &str, _: Option<&Value>) {
            panic!("notification")
        }
    }

    #[test]
    fn a_panicking_handler_answers_as_a_failed_one() {
        let h = CaughtHandler::wrap(Arc::new(Panics));
        assert_eq!(h.capabilities(), ClientCapabilities::default());
        let e = h.create_message("s", Value::Null).unwrap_err();
        assert_eq!(e.code, codes::INTERNAL_ERROR);
        assert!(e.message.contains("sampling failed"), "{}", e.message);
        h.on_notification("s", "m", None);
    }
}
