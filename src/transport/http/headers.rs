//! The headers every request of a Streamable HTTP session gets from its era: the protocol
//! version, and the headers the era encoded for the message. The session id is
//! `session_id`'s.

use ureq::http::{HeaderName, HeaderValue};

use super::{Shared, VERSION_HEADER};
use crate::protocol::ProtocolVersion;
use crate::transport::Envelope;

/// A request: the headers every request of a session gets.
pub(super) trait WithHeader: Sized {
    fn with_header(self, name: HeaderName, value: HeaderValue) -> Self;
}

impl WithHeader for ureq::http::Request<()> {
    fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers_mut().append(name, value);
        self
    }
}

impl Shared {
    /// Keeps the version `envelope` goes under (none, for an `initialize` after a stateless
    /// probe), for the transport's own requests.
    pub(super) fn remember_version(&self, envelope: &Envelope) {
        if *self.version.read() != envelope.version {
            *self.version.write() = envelope.version;
        }
    }

    /// `request` with the `MCP-Protocol-Version` header, where `version`'s revision has it.
    pub(super) fn with_version<R: WithHeader>(
        &self,
        request: R,
        version: Option<ProtocolVersion>,
    ) -> R {
        match version {
            Some(v) if v.sends_version_header() => {
                request.with_header(VERSION_HEADER, HeaderValue::from_static(v.as_str()))
            }
            _ => request,
        }
    }

    /// `request` with the headers the message's era asks for (already encoded by the era).
    pub(super) fn with_envelope<R: WithHeader>(&self, mut request: R, envelope: &Envelope) -> R {
        request = self.with_version(request, envelope.version);
        for (name, value) in &envelope.headers {
            match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                (Ok(name), Ok(value)) => request = request.with_header(name, value),
                _ => log::debug!(
                    "[{}] a header the era asked for is not valid; left out",
                    self.name
                ),
            }
        }
        request
    }
}
