//! OpenTelemetry (the `otel` feature): a CLIENT span and the operation metric for every request,
//! by the MCP semantic conventions, and the trace context carried into every request's
//! `params._meta` (and its HTTP headers); a SERVER span for each request a server sends us,
//! continuing the server's context, and one for each notification it sends that the host hears;
//! spans for the library's own work (the connect with its era probe and handshake, the OAuth
//! requests), and the threads we start continue the context of what started them. See
//! docs/telemetry.md.
//!
//! The client calls the same few functions with the feature or without it: without it they are
//! empty and inlined away, so nothing of it is compiled and nothing costs.

mod peer;
pub(crate) use peer::Peer;

#[cfg(feature = "otel")]
mod options;
#[cfg(feature = "otel")]
pub use options::Telemetry;

#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod spans;
#[cfg(feature = "otel")]
mod w3c;
#[cfg(feature = "otel")]
pub(crate) use otel::{Carried, Session};
#[cfg(all(feature = "otel", feature = "oauth"))]
pub(crate) use spans::http_request;
#[cfg(feature = "otel")]
pub(crate) use spans::{connecting, receiving, serving, Connecting};

#[cfg(not(feature = "otel"))]
mod off;
#[cfg(all(not(feature = "otel"), feature = "oauth"))]
pub(crate) use off::http_request;
#[cfg(not(feature = "otel"))]
pub(crate) use off::{connecting, receiving, serving, Carried, Connecting, Session};

/// What a connection's telemetry is set with: [`Telemetry`] with the feature, nothing without.
#[cfg(feature = "otel")]
pub(crate) type Settings = Telemetry;
/// What a connection's telemetry is set with: [`Telemetry`] with the feature, nothing without.
#[cfg(not(feature = "otel"))]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Settings;
