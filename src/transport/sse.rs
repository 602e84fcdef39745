//! The legacy HTTP+SSE transport (revision 2024-11-05, still common in the wild).
//!
//! A GET opens an event stream; its first `endpoint` event names the URL to POST messages to
//! (relative to the stream's URL, and refused if it is on another origin). Every message is a
//! POST there; every reply comes as a `message` event on the stream, read by the thread
//! `mcp-<server>-sse`. The session lives and dies with the stream: when it ends, every pending
//! request fails at once.
//!
//! The stream is opened on the reader thread, so the whole connect (TCP, headers, the wait for
//! the endpoint) is bounded by the caller's deadline. Redirects are never followed (see `web`);
//! configured headers go only to the stream's origin, and URLs are shown redacted.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use ureq::http::{HeaderValue, Uri};

use super::sse_parser::SseDecoder;
use super::web::{self, StreamEnd};
use super::{Inbound, Transport};
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::net::target::{HttpOptions, HttpTarget};
use crate::panic::Boundary;

/// A legacy HTTP+SSE connection. Dropping it closes it.
pub struct SseTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    /// The stream's URL, redacted.
    shown: String,
    endpoint: Uri,
    /// The endpoint, redacted.
    endpoint_shown: String,
    /// Requests go to the proxy as they are (see `web::Wire`).
    forwarded: bool,
    /// The target's auth provider, told of the server's DPoP nonces.
    auth: Option<Arc<dyn crate::net::target::AuthProvider>>,
    remote: Arc<web::Remote>,
    options: HttpOptions,
    /// Shared with the reader, so it can tell our close from the server's.
    closed: Arc<AtomicBool>,
    /// The proxy the connection goes through, without its credentials.
    proxy: Option<String>,
}

/// How far the connection got, as the reader thread and `connect` see it.
#[derive(PartialEq)]
enum Phase {
    /// `connect` is waiting for the endpoint.
    Connecting,
    /// `connect` returned the transport: the reader reports the stream's end.
    Ready,
    /// `connect` gave up, or the stream ended before it was done.
    Over,
}

impl SseTransport {
    /// Opens the stream and waits (until `deadline`) for the `endpoint` event. The stream is
    /// opened on the reader thread, so that every phase of it (connect, headers, the wait for
    /// the endpoint) is bounded by `deadline`: past it the connections are shut down.
    pub fn connect(
        name: &str,
        target: &HttpTarget,
        options: &HttpOptions,
        inbound: Arc<dyn Inbound>,
        deadline: Instant,
    ) -> Result<SseTransport, Error> {
        let target = &super::caught_auth::caught(target);
        let wire = web::Wire::new(target, options)?;
        let base = wire.split.public.clone();
        let shown = wire.split.shown.clone();
        let remote = Arc::new(web::Remote::new(options, &wire));
        let forwarded = wire.forwards();
        let proxy = (wire.proxy.as_ref()).map(|p| p.url.redacted().to_owned());
        let (endpoint_tx, endpoint_rx) = crossbeam_channel::bounded::<Result<String, Error>>(1);
        let closed = Arc::new(AtomicBool::new(false));
        let phase = Arc::new(Mutex::new(Phase::Connecting));
        let (reader_name, reader_closed, reader_phase, reader_remote, limit) = (
            name.to_owned(),
            Arc::clone(&closed),
            Arc::clone(&phase),
            Arc::clone(&remote),
            options.max_message_bytes,
        );
        let (reader_base, reader_shown) = (base.clone(), shown.clone());
        // A panic in the reader: before the endpoint came, `connect` fails with it; after, the
        // connection ends with it.
        let on_panic = {
            let (endpoint_tx, inbound) = (endpoint_tx.clone(), Arc::clone(&inbound));
            let (closed, phase, remote) =
                (Arc::clone(&closed), Arc::clone(&phase), Arc::clone(&remote));
            move |e: Error| {
                let ready = std::mem::replace(&mut *phase.lock(), Phase::Over) == Phase::Ready;
                closed.store(true, Ordering::SeqCst);
                remote.shutdown();
                if ready {
                    inbound.on_closed(e);
                } else {
                    let _ = endpoint_tx.send(Err(e));
                }
            }
        };
        let reader = move || {
            let opened = open_stream(
                &reader_remote,
                &reader_base,
                &reader_shown,
                forwarded,
                deadline,
            );
            let body = match opened {
                Ok(body) => body,
                Err(e) => {
                    let _ = endpoint_tx.send(Err(e));
                    return;
                }
            };
            let mut decoder = SseDecoder::new(limit);
            let mut endpoint_tx = Some(endpoint_tx);
            let end = web::read_events(body, &mut decoder, &mut |event| {
                match event.event.as_str() {
                    "endpoint" => {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(Ok(event.data));
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
                Error::closed_by_owner()
            } else {
                match end {
                    StreamEnd::Failed(e) => e,
                    _ => Error::closed("the server ended the SSE stream"),
                }
            };
            let ready = {
                let mut phase = reader_phase.lock();
                let ready = *phase == Phase::Ready;
                *phase = Phase::Over;
                ready
            };
            // Before `connect` returned, the stream's end is its error, not ours to report.
            if ready {
                inbound.on_closed(error);
            }
        };
        let spawned = crate::panic::spawn(
            format!("mcp-{name}-sse"),
            Boundary::SseStream,
            reader,
            on_panic,
        );
        let give_up = |error: Error| {
            *phase.lock() = Phase::Over;
            closed.store(true, Ordering::SeqCst);
            remote.shutdown();
            error
        };
        if let Err(e) = spawned {
            return Err(give_up(Error::closed(format!(
                "cannot start the SSE reader: {e}"
            ))));
        }
        let endpoint = match endpoint_rx.recv_deadline(deadline) {
            Ok(Ok(e)) => e,
            Ok(Err(e)) => return Err(give_up(e)),
            Err(_) => {
                return Err(give_up(Error::closed(format!(
                    "{shown} sent no endpoint event{}",
                    if Instant::now() >= deadline {
                        " in time"
                    } else {
                        " before the stream ended"
                    }
                ))));
            }
        };
        let resolved = match crate::net::url::resolve(&base, &endpoint) {
            Ok(u) if crate::net::url::origin(&u) == crate::net::url::origin(&base) => u,
            Ok(u) => {
                return Err(give_up(Error::protocol(format!(
                    "the SSE endpoint {} is not on the origin of {shown}; refused",
                    crate::net::url::redact(&u.to_string())
                ))));
            }
            Err(e) => return Err(give_up(e)),
        };
        {
            let mut p = phase.lock();
            if *p != Phase::Connecting {
                drop(p);
                return Err(give_up(Error::closed("the server ended the SSE stream")));
            }
            *p = Phase::Ready;
        }
        let endpoint_shown = crate::net::url::redact(&resolved.to_string());
        log::debug!("[{name}] legacy SSE endpoint: {endpoint_shown}");
        Ok(SseTransport {
            shared: Arc::new(Shared {
                name: name.to_owned(),
                shown,
                endpoint: resolved,
                endpoint_shown,
                forwarded: wire.forwards(),
                auth: target.auth.clone(),
                remote,
                options: options.clone(),
                closed,
                proxy,
            }),
        })
    }
}

/// Opens the event stream at `base`, everything until its headers bounded by `deadline`.
fn open_stream(
    remote: &web::Remote,
    base: &Uri,
    shown: &str,
    forwarded: bool,
    deadline: Instant,
) -> Result<ureq::BodyReader<'static>, Error> {
    let mut request = web::request(ureq::http::Method::GET, base);
    (request.headers_mut()).insert("accept", HeaderValue::from_static("text/event-stream"));
    // Everything until the headers bounded by the deadline; the stream lives as long as the
    // session.
    let left = web::left(deadline);
    let budget = crate::net::exchange::Budget {
        deadline: None,
        connect: left,
        send: left,
        receive: left,
        stream: true,
    };
    let response = remote
        .send(request, &[], budget, true)
        .map_err(|e| web::transport_error(e, shown, "GET"))?;
    if web::is_redirect(&response) {
        return Err(web::redirect_error(&response, base));
    }
    if !response.status().is_success() {
        return Err(web::status_error(response, shown, forwarded));
    }
    if !web::is_event_stream(&response) {
        return Err(Error::protocol(format!(
            "{shown} did not answer with text/event-stream"
        )));
    }
    Ok(web::stream_body(response))
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("name", &self.shared.name)
            .field("url", &self.shared.shown)
            .field("endpoint", &self.shared.endpoint_shown)
            .finish_non_exhaustive()
    }
}

impl Transport for SseTransport {
    // Legacy SSE (2024-11-05) has no version header and no era rules: the envelope's
    // headers do not apply, and a request's answer always comes on the stream.
    fn send(&self, message: &Message, _: &super::Envelope) -> Result<(), Error> {
        let s = &self.shared;
        if s.closed.load(Ordering::SeqCst) {
            return Err(Error::closed_by_owner());
        }
        if web::is_cancellation(message) {
            let (shared, message) = (Arc::clone(s), message.clone());
            // A panic here is logged: the cancellation is a courtesy.
            let _ = crate::panic::spawn(
                format!("mcp-{}-cancel", s.name),
                Boundary::CancelSend,
                move || {
                    if let Err(e) = shared.post(&message) {
                        log::debug!("[{}] sending a cancellation failed: {e}", shared.name);
                    }
                },
                |_| {},
            );
            return Ok(());
        }
        s.post(message)
    }

    fn close(&self) {
        let s = &self.shared;
        if !s.closed.swap(true, Ordering::SeqCst) {
            log::debug!("[{}] closing the SSE stream", s.name);
            s.remote.shutdown();
        }
    }

    fn kind(&self) -> &'static str {
        "sse"
    }

    fn proxy(&self) -> Option<String> {
        self.shared.proxy.clone()
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
        let shown = &self.endpoint_shown;
        let mut request = web::request(ureq::http::Method::POST, &self.endpoint);
        (request.headers_mut())
            .insert("content-type", HeaderValue::from_static("application/json"));
        let budget =
            crate::net::exchange::Budget::until(Instant::now() + self.options.post_timeout);
        let response = (self.remote)
            .send(request, &body, budget, false)
            .map_err(|e| web::transport_error(e, shown, "POST"))?;
        web::note_nonce(&response, self.auth.as_ref(), &self.endpoint);
        if web::is_redirect(&response) {
            return Err(web::redirect_error(&response, &self.endpoint));
        }
        if !response.status().is_success() {
            return Err(web::status_error(response, shown, self.forwarded));
        }
        let _ = web::read_body(response, 64 * 1024, shown);
        Ok(())
    }
}
