//! A request's exchange from its POST to its answer: the response stream resumed with
//! `Last-Event-ID` when it is cut (within the request's deadline and `resume_attempts`), and an
//! answer that came on another stream taken from `strays`.

use std::sync::Arc;
use std::time::Instant;

use ureq::http::header::ACCEPT;
use ureq::http::HeaderValue;

use super::{Reply, Shared};
use crate::error::Error;
use crate::jsonrpc::{Message, RequestId, Response as RpcResponse};
use crate::net::abort::Abort;
use crate::transport::{web, Envelope};

impl Shared {
    /// Posts the request `message` (whose id is `id`), resuming a cut response stream.
    pub(super) fn post_and_resume(
        &self,
        message: &Message,
        envelope: &Envelope,
        id: &RequestId,
        deadline: Option<Instant>,
        abort: Option<&Abort>,
    ) -> Result<RpcResponse, Error> {
        // A caller without a switch of its own runs its exchange in one, so that its answer
        // arriving on another stream (see `strays`) ends a wait that would carry nothing more.
        let own = abort.is_none().then(|| Arc::new(Abort::default()));
        let key = id.as_i64();
        let _in_flight = key.map(|k| self.strays.begin(k, own.clone()));
        let stray = || key.and_then(|k| self.strays.take(k));
        let run = |step: &dyn Fn() -> Result<Reply, Error>| match &own {
            Some(a) => a.scope(step),
            None => step(),
        };
        let mut reply = match run(&|| self.post(message, envelope, Some(id), deadline)) {
            Err(e) => return stray().map(Ok).unwrap_or(Err(e)),
            Ok(reply) => reply,
        };
        let mut attempts = 0;
        loop {
            if !matches!(reply, Reply::Answer(_)) {
                if let Some(r) = stray() {
                    return Ok(r);
                }
            }
            match reply {
                Reply::Answer(r) => return Ok(r),
                // The spec has a request answered with its response (JSON, or an event
                // stream): one answered without it would otherwise wait its whole timeout.
                Reply::Accepted(what) => {
                    return Err(Error::protocol(format!(
                        "the server answered request {id} with {what}, without its JSON-RPC \
                         response"
                    )))
                }
                Reply::Cut {
                    last_event_id: Some(last),
                    retry,
                } if attempts < self.options.resume_attempts => {
                    attempts += 1;
                    let mut delay = retry.unwrap_or(self.options.default_retry);
                    if let Some(d) = deadline {
                        delay = delay.min(d.saturating_duration_since(Instant::now()));
                    }
                    if !self.pause(delay, abort.or(own.as_deref())) {
                        if let Some(r) = stray() {
                            return Ok(r);
                        }
                        return Err(Error::closed_by_owner());
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::closed("the request ran out of time before resuming"));
                    }
                    log::debug!("[{}] resuming the response stream after event {last:?}", self.name);
                    reply = match run(&|| self.resume(&last, envelope, id, deadline)) {
                        Err(e) => return stray().map(Ok).unwrap_or(Err(e)),
                        Ok(reply) => reply,
                    };
                }
                Reply::Cut { last_event_id, .. } => {
                    return Err(Error::closed(match last_event_id {
                        Some(_) => format!(
                            "the response stream ended before the response, {attempts} times"
                        ),
                        None => "the response stream ended before the response (no event id to resume from)"
                            .to_owned(),
                    }))
                }
            }
        }
    }

    /// Resumes a cut response stream with a GET carrying `Last-Event-ID`, bounded by the
    /// request's deadline.
    fn resume(
        &self,
        last_event_id: &str,
        envelope: &Envelope,
        expect: &RequestId,
        deadline: Option<Instant>,
    ) -> Result<Reply, Error> {
        let mut request = web::request(ureq::http::Method::GET, &self.uri);
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let id = HeaderValue::from_str(last_event_id)
            .map_err(|_| Error::protocol("the stream's last event id is not a header value"))?;
        headers.insert("last-event-id", id);
        let request = self.with_version(self.with_session(request), envelope.version);
        let response = (self.remote)
            .send(request, &[], self.remote.budget(deadline).streaming(), true)
            .map_err(|e| self.failure(e, "GET"))?;
        web::note_nonce(&response, self.target_auth.as_ref(), &self.uri);
        if web::is_redirect(&response) {
            return Err(web::redirect_error(&response, &self.uri));
        }
        if !response.status().is_success() {
            return Err(web::status_error(
                response,
                &self.wire.split.shown,
                self.wire.forwards(),
            ));
        }
        if !web::is_event_stream(&response) {
            return Err(Error::protocol(
                "the resumed stream is not text/event-stream",
            ));
        }
        self.read_stream(response, Some(expect), Some(last_event_id))
    }
}
