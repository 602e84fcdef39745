//! The legacy HTTP+SSE transport (revision 2024-11-05, still common in the wild).
//!
//! A GET opens an event stream; its first `endpoint` event names the URL to POST messages to
//! (relative to the stream's URL, and refused if it is on another origin). Every message is a
//! POST there; every reply comes as a `message` event on the stream, read by the thread
//! `mcp-<server>-sse`. The session lives and dies with the stream: when it ends, every pending
//! request fails at once.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ureq::http::Uri;

use super::sse_parser::SseDecoder;
use super::web::{self, HttpOptions, HttpTarget, StreamEnd};
use super::{Inbound, Transport};
use crate::jsonrpc::Message;
use crate::Error;

/// A legacy HTTP+SSE connection. Dropping it closes it.
pub struct SseTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    target: HttpTarget,
    endpoint: Uri,
    agent: ureq::Agent,
    options: HttpOptions,
    /// Shared with the reader, so it can tell our close from the server's.
    closed: Arc<AtomicBool>,
}

impl SseTransport {
    /// Opens the stream and waits (until `deadline`) for the `endpoint` event.
    pub fn connect(
        name: &str,
        target: &HttpTarget,
        options: &HttpOptions,
        inbound: Arc<dyn Inbound>,
        deadline: Instant,
    ) -> Result<SseTransport, Error> {
        let base = super::url::parse(&target.url)?;
        let agent = web::agent(options);
        let left = deadline.saturating_duration_since(Instant::now());
        let request = agent
            .get(&target.url)
            .config()
            .timeout_recv_response(Some(left))
            // The stream lives as long as the session.
            .timeout_recv_body(None)
            .build()
            .header("Accept", "text/event-stream");
        let response = web::with_target_headers(request, target)
            .call()
            .map_err(|e| web::transport_error(e, &target.url, "GET"))?;
        if !response.status().is_success() {
            return Err(web::status_error(response));
        }
        if !web::is_event_stream(&response) {
            return Err(Error::protocol(format!(
                "{} did not answer with text/event-stream",
                target.url
            )));
        }
        let (endpoint_tx, endpoint_rx) = crossbeam_channel::bounded::<String>(1);
        let closed = Arc::new(AtomicBool::new(false));
        let body = web::stream_body(response);
        let (reader_name, reader_closed, limit) = (
            name.to_owned(),
            Arc::clone(&closed),
            options.max_message_bytes,
        );
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{name}-sse"))
            .spawn(move || {
                let mut decoder = SseDecoder::new(limit);
                let mut endpoint_tx = Some(endpoint_tx);
                let end = web::read_events(body, &mut decoder, &mut |event| {
                    match event.event.as_str() {
                        "endpoint" => {
                            if let Some(tx) = endpoint_tx.take() {
                                let _ = tx.send(event.data);
                            }
                        }
                        "message" => {
                            for m in web::messages(&reader_name, event.data.as_bytes()) {
                                inbound.on_message(m);
                            }
                        }
                        other => {
                            log::debug!("[{reader_name}] ignoring an SSE event of type {other:?}")
                        }
                    }
                    ControlFlow::Continue(())
                });
                let error = if reader_closed.load(Ordering::SeqCst) {
                    Error::closed("the connection was closed")
                } else {
                    match end {
                        StreamEnd::Failed(e) => e,
                        _ => Error::closed("the server ended the SSE stream"),
                    }
                };
                inbound.on_closed(error);
            });
        if let Err(e) = spawned {
            agent.shutdown();
            return Err(Error::closed(format!("cannot start the SSE reader: {e}")));
        }
        let endpoint = match endpoint_rx.recv_deadline(deadline) {
            Ok(e) => e,
            Err(_) => {
                agent.shutdown();
                return Err(Error::closed(format!(
                    "{} sent no endpoint event{}",
                    target.url,
                    if Instant::now() >= deadline {
                        " in time"
                    } else {
                        " before the stream ended"
                    }
                )));
            }
        };
        let resolved = match super::url::resolve(&base, &endpoint) {
            Ok(u) if super::url::origin(&u) == super::url::origin(&base) => u,
            Ok(u) => {
                agent.shutdown();
                return Err(Error::protocol(format!(
                    "the SSE endpoint {u} is not on the origin of {}; refused",
                    target.url
                )));
            }
            Err(e) => {
                agent.shutdown();
                return Err(e);
            }
        };
        log::debug!("[{name}] legacy SSE endpoint: {resolved}");
        Ok(SseTransport {
            shared: Arc::new(Shared {
                name: name.to_owned(),
                target: target.clone(),
                endpoint: resolved,
                agent,
                options: options.clone(),
                closed,
            }),
        })
    }
}

impl Transport for SseTransport {
    fn send(&self, message: &Message) -> Result<(), Error> {
        let s = &self.shared;
        if s.closed.load(Ordering::SeqCst) {
            return Err(Error::closed("the connection was closed"));
        }
        if web::is_cancellation(message) {
            let (shared, message) = (Arc::clone(s), message.clone());
            let _ = std::thread::Builder::new()
                .name(format!("mcp-{}-cancel", s.name))
                .spawn(move || {
                    if let Err(e) = shared.post(&message) {
                        log::debug!("[{}] sending a cancellation failed: {e}", shared.name);
                    }
                });
            return Ok(());
        }
        s.post(message)
    }

    fn close(&self) {
        let s = &self.shared;
        if !s.closed.swap(true, Ordering::SeqCst) {
            log::debug!("[{}] closing the SSE stream", s.name);
            s.agent.clone().shutdown();
        }
    }

    fn kind(&self) -> &'static str {
        "sse"
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    /// POSTs one message to the endpoint; replies come on the stream.
    fn post(&self, message: &Message) -> Result<(), Error> {
        let mut body = Vec::with_capacity(256);
        message.write_json(&mut body);
        let url = self.endpoint.to_string();
        let request = self
            .agent
            .post(&url)
            .config()
            .timeout_recv_response(Some(self.options.post_timeout))
            .build()
            .header("Content-Type", "application/json");
        let response = web::with_target_headers(request, &self.target)
            .send(&body[..])
            .map_err(|e| web::transport_error(e, &url, "POST"))?;
        if !response.status().is_success() {
            return Err(web::status_error(response));
        }
        let _ = web::read_body(response, 64 * 1024, &url);
        Ok(())
    }
}
