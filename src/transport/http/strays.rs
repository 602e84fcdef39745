//! Answers that come on another stream than their request's.
//!
//! The specification puts a request's response on that request's own stream (its POST's reply,
//! or the GET that resumes it after a cut). A server may still send it elsewhere: on the
//! standalone GET stream when that stream opened just before the resumption it was waiting for
//! (the conformance suite's `sse-retry` server does, depending on timing). Such an answer is not
//! lost: while a request is in flight its id is registered here; a response for it that arrives
//! on any other stream is kept, and the request's own exchange (when it runs in a scope of its
//! own) is aborted so that it looks here at once instead of waiting on a stream that will carry
//! nothing more. Responses for ids not in flight go to the client as before.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::jsonrpc::Response as RpcResponse;
use crate::net::abort::Abort;

/// The in-flight requests and the answers that came for them on other streams.
#[derive(Default)]
pub(super) struct Strays {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// In-flight request ids, with the switch that interrupts their exchange, if any.
    waiting: HashMap<i64, Option<Arc<Abort>>>,
    /// Answers kept for them.
    answers: HashMap<i64, RpcResponse>,
}

/// An in-flight request's registration; dropping it forgets the id and any answer kept.
pub(super) struct InFlight<'a> {
    strays: &'a Strays,
    id: i64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut s = self.strays.state.lock();
        s.waiting.remove(&self.id);
        s.answers.remove(&self.id);
    }
}

impl Strays {
    /// Registers request `id` as in flight; `interrupt` is aborted when its answer comes
    /// elsewhere.
    pub(super) fn begin(&self, id: i64, interrupt: Option<Arc<Abort>>) -> InFlight<'_> {
        self.state.lock().waiting.insert(id, interrupt);
        InFlight { strays: self, id }
    }

    /// A response that came on a stream not its request's: kept (and `None` returned) when its
    /// request is in flight, else handed back.
    pub(super) fn offer(&self, response: RpcResponse) -> Option<RpcResponse> {
        let Some(id) = response.id.as_ref().and_then(|i| i.as_i64()) else {
            return Some(response);
        };
        let interrupt = {
            let mut s = self.state.lock();
            let Some(interrupt) = s.waiting.get(&id).cloned() else {
                return Some(response);
            };
            s.answers.insert(id, response);
            interrupt
        };
        // Shutting the exchange's socket down is I/O: outside the lock.
        if let Some(abort) = interrupt {
            abort.abort();
        }
        None
    }

    /// The answer kept for `id`, if one came.
    pub(super) fn take(&self, id: i64) -> Option<RpcResponse> {
        self.state.lock().answers.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;

    fn response(id: i64) -> RpcResponse {
        RpcResponse {
            id: Some(RequestId::Number(id)),
            outcome: Ok(serde_json::value::RawValue::from_string("{}".into()).unwrap()),
        }
    }

    #[test]
    fn an_answer_for_a_request_in_flight_is_kept_and_interrupts_it() {
        let strays = Strays::default();
        let abort = Arc::new(Abort::default());
        {
            let _in_flight = strays.begin(7, Some(Arc::clone(&abort)));
            assert!(
                strays.offer(response(8)).is_some(),
                "not in flight: handed back"
            );
            assert!(strays.offer(response(7)).is_none());
            assert!(abort.is_aborted());
            assert_eq!(strays.take(7).unwrap().id, Some(RequestId::Number(7)));
            assert!(strays.take(7).is_none());
            assert!(strays.offer(response(7)).is_none());
        }
        // The request ended: nothing is kept for it any more.
        assert!(strays.take(7).is_none());
        assert!(strays.offer(response(7)).is_some());
    }
}
