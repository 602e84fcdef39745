//! The Streamable HTTP transport's GET stream, which carries server-initiated messages: one
//! listener thread at a time, started after each handshake (the first, and each one the client
//! runs again for a session the server forgot) unless one still runs.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ureq::http::header::ACCEPT;
use ureq::http::HeaderValue;

use super::Shared;
use crate::net::abort::Abort;
use crate::transport::sse_parser::SseDecoder;
use crate::transport::web::{self, StreamEnd};

/// Consecutive failed GET-stream connections before the listener gives up.
const MAX_LISTEN_FAILURES: u32 = 10;
/// Consecutive connection-level failures (refused, unreachable) of the GET stream's
/// reconnection after which the server counts as gone and the transport ends.
pub const MAX_DEAD_LISTENS: u32 = 3;
/// A GET stream open this long counts as healthy even if it carried nothing.
const HEALTHY_STREAM: Duration = Duration::from_secs(30);

/// Whether the listener runs, and whether a handshake asked for the stream since the listener
/// last connected (a listener about to give up then tries again, with the new session).
#[derive(Debug, Default)]
pub(super) struct Listening {
    running: bool,
    wanted: bool,
}

impl Listening {
    /// A handshake is done: true when no listener runs, and the caller must start one.
    pub(super) fn start(&mut self) -> bool {
        self.wanted = true;
        !std::mem::replace(&mut self.running, true)
    }

    /// The listener could not be started, or ended.
    pub(super) fn stopped(&mut self) {
        self.running = false;
    }
}

impl Shared {
    /// Waits `delay`, or less if the transport closes or the exchange is aborted; false when
    /// either happened.
    pub(super) fn pause(&self, delay: Duration, abort: Option<&Abort>) -> bool {
        // The tokens' channels never carry a value: they time out, or disconnect on cancel.
        match abort {
            Some(a) => {
                crossbeam_channel::select! {
                    recv(self.stop.receiver()) -> _ => {}
                    recv(a.token().receiver()) -> _ => {}
                    default(delay) => {}
                }
            }
            None => {
                let _ = self.stop.receiver().recv_timeout(delay);
            }
        }
        !self.stop.is_cancelled() && !abort.is_some_and(Abort::is_aborted)
    }

    /// The listener thread: [`Shared::listen_once`] until it ends with nobody asking for the
    /// stream again meanwhile.
    pub(super) fn listen(&self) {
        loop {
            self.listen_once();
            let mut listening = self.listening.lock();
            if !listening.wanted || self.closed.load(Ordering::SeqCst) {
                listening.stopped();
                return;
            }
        }
    }

    /// The GET stream: server requests and notifications, reconnected with a capped backoff,
    /// until the server offers none, it keeps failing, or the transport closes.
    fn listen_once(&self) {
        let mut last_event_id: Option<String> = None;
        let mut retry: Option<Duration> = None;
        let mut failures: u32 = 0;
        let mut dead: u32 = 0;
        // Whether the stream was just opened again for a DPoP nonce (once in a row).
        let mut nonce_retried = false;
        while !self.closed.load(Ordering::SeqCst) {
            // This connection uses the session as it is now: what a handshake asked for.
            self.listening.lock().wanted = false;
            // The GET stream may stay open, and silent, for as long as it likes.
            let mut request = web::request(ureq::http::Method::GET, &self.uri);
            let headers = request.headers_mut();
            headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Some(id) = last_event_id
                .as_deref()
                .and_then(|i| HeaderValue::from_str(i).ok())
            {
                headers.insert("last-event-id", id);
            }
            let request = self.with_version(self.with_session(request), *self.version.read());
            let mut delivered = false;
            let opened = Instant::now();
            let called =
                (self.remote).send(request, &[], self.remote.budget(None).streaming(), true);
            if let Some(told) = self.listen_opened.lock().take() {
                let _ = told.send(());
            }
            match called {
                Err(e) => {
                    let unreachable = web::is_connection_failure(&e);
                    let error = web::transport_error(e, &self.wire.split.shown, "GET");
                    log::debug!("[{}] GET stream: {error}", self.name);
                    dead = if unreachable { dead + 1 } else { 0 };
                    if dead >= MAX_DEAD_LISTENS {
                        self.die(error);
                        return;
                    }
                }
                Ok(response) => {
                    dead = 0;
                    web::note_nonce(&response, self.target_auth.as_ref(), &self.uri);
                    let status = response.status().as_u16();
                    if web::is_redirect(&response) {
                        log::warn!(
                            "[{}] no GET stream: {}",
                            self.name,
                            web::redirect_error(&response, &self.uri)
                        );
                        return;
                    }
                    let nonce_asked = status == 401
                        && web::header(&response, "www-authenticate")
                            .is_some_and(|c| super::auth::asks_dpop_nonce(&c));
                    if nonce_asked && !nonce_retried {
                        // The server's new DPoP nonce is the provider's now: open it again.
                        nonce_retried = true;
                        continue;
                    }
                    if (400..500).contains(&status) && ![404, 408, 429].contains(&status) {
                        log::debug!("[{}] the server offers no GET stream ({status})", self.name);
                        return;
                    }
                    if !response.status().is_success() || !web::is_event_stream(&response) {
                        log::debug!("[{}] GET stream refused ({status})", self.name);
                    } else {
                        nonce_retried = false;
                        let stateless = self
                            .version
                            .read()
                            .is_some_and(crate::protocol::ProtocolVersion::is_stateless);
                        self.remember_session(&response, false, stateless);
                        let mut decoder = SseDecoder::new(self.options.max_message_bytes);
                        let end = web::read_events(
                            web::stream_body(response),
                            &mut decoder,
                            &mut |event| {
                                if event.event == "message" {
                                    delivered = true;
                                    self.dispatch(event.data.as_bytes(), None);
                                }
                                ControlFlow::Continue(())
                            },
                        );
                        if let StreamEnd::Failed(e) = end {
                            log::debug!("[{}] GET stream: {e}", self.name);
                        }
                        if let Some(id) = decoder.last_event_id() {
                            last_event_id = Some(id.to_owned());
                        }
                        if let Some(ms) = decoder.retry_ms() {
                            retry = Some(Duration::from_millis(ms));
                        }
                    }
                }
            }
            // Only a stream that delivered something, or stayed open a good while, resets the
            // backoff: a server answering with empty streams must not make us reconnect in a
            // tight loop.
            let healthy = delivered || opened.elapsed() >= HEALTHY_STREAM;
            failures = if healthy { 0 } else { failures + 1 };
            if failures > MAX_LISTEN_FAILURES {
                log::warn!(
                    "[{}] giving up on the GET stream after {failures} empty attempts",
                    self.name
                );
                return;
            }
            // The server's `retry:` is honoured up to the longest backoff (one that says to
            // wait for ever would park the listener until the connection closes).
            let base = retry
                .unwrap_or(self.options.default_retry)
                .min(self.options.max_backoff);
            let delay = base
                .saturating_mul(1 << failures.min(16))
                .min(self.options.max_backoff);
            if !self.pause(delay, None) {
                return;
            }
        }
    }
}
