//! Without the `otel` feature: the same calls, doing nothing.

use serde_json::value::RawValue;
use serde_json::Value;

use super::{Peer, Settings};
use crate::error::Error;

/// A connection's telemetry: none.
pub(crate) struct Session;

impl Session {
    #[inline]
    pub(crate) fn new(_: Settings, _: Peer) -> Session {
        Session
    }

    #[inline]
    pub(crate) fn outgoing(
        &self,
        _: &str,
        _: &mut Option<Value>,
        _: Option<i64>,
        _: impl FnOnce() -> Option<String>,
    ) -> Outgoing {
        Outgoing
    }

    #[inline]
    pub(crate) fn end(&self, _: Option<&'static str>, _: Option<&Error>) {}
}

/// A request on its way: nothing to trace.
pub(crate) struct Outgoing;

impl Outgoing {
    #[inline]
    pub(crate) fn headers(&self, _: &mut Vec<(String, String)>) {}

    #[inline]
    pub(crate) fn enter(&self) -> Entered {
        Entered
    }

    #[inline]
    pub(crate) fn carried(&self) -> Carried {
        Carried
    }

    #[inline]
    pub(crate) fn finish(self, _: Option<&'static str>, _: Result<Option<&RawValue>, &Error>) {}
}

/// No span made current.
pub(crate) struct Entered;

/// No context to carry.
/// (Not `Copy`: the same code clones the feature's context.)
#[derive(Clone, Default, Debug)]
pub(crate) struct Carried;

impl Carried {
    #[inline]
    pub(crate) fn none() -> Carried {
        Carried
    }

    #[inline]
    pub(crate) fn here() -> Carried {
        Carried
    }

    #[inline]
    pub(crate) fn attach(&self) -> Entered {
        Entered
    }
}

/// No connect span.
pub(crate) struct Connecting;

#[inline]
pub(crate) fn connecting(_: &str, _: &Peer) -> Connecting {
    Connecting
}

impl Connecting {
    #[inline]
    pub(crate) fn finish(self, _: Result<&'static str, &Error>) {}
}

/// No server-request span.
pub(crate) struct Serving;

#[inline]
pub(crate) fn serving(_: &str, _: &str, _: Option<&Value>) -> Serving {
    Serving
}

impl Serving {
    #[inline]
    pub(crate) fn finish(self, _: Option<(i64, &str)>) {}
}

/// No notification span.
pub(crate) struct Receiving;

#[inline]
pub(crate) fn receiving(_: &str, _: Option<&Value>, _: &Carried) -> Receiving {
    Receiving
}

/// No HTTP span.
#[cfg(feature = "oauth")]
pub(crate) struct HttpRequest;

#[inline]
#[cfg(feature = "oauth")]
pub(crate) fn http_request(_: &str, _: &str, _: &'static str) -> HttpRequest {
    HttpRequest
}

#[cfg(feature = "oauth")]
impl HttpRequest {
    #[inline]
    pub(crate) fn finish(self, _: Result<u16, &Error>) {}
}
