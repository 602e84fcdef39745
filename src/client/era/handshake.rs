//! The handshake of the 2024-11-05 … 2025-11-25 revisions: `initialize`, version negotiation,
//! `notifications/initialized`. It runs when a client connects, and again when an HTTP server
//! forgot the session (see `renewal`).

use std::time::Instant;

use crate::client::{ConnectOptions, Connection, Wait};
use crate::error::Error;
use crate::protocol::{
    methods, Implementation, InitializeParams, InitializeResult, ProtocolVersion,
    LATEST_PROTOCOL_VERSION,
};

/// Runs the handshake on a fresh connection, bounded by `options.timeout` from `started`.
pub(crate) fn run(
    conn: &Connection,
    options: &ConnectOptions,
    started: Instant,
) -> Result<(InitializeResult, ProtocolVersion), Error> {
    let wait = Wait {
        timeout: options.timeout,
        hard_deadline: started + options.timeout,
        cancel: options.cancel.clone(),
        on_progress: None,
        notify_cancel: false,
    };
    initialize(conn, &options.client_info, wait).map_err(|e| match e {
        Error::Timeout { .. } => conn.timed_out(options.timeout),
        other => other,
    })
}

/// `initialize` (waiting as `wait` says; it is never cancelled on the wire), the version
/// check, `notifications/initialized`, and the transport told of each step.
pub(crate) fn initialize(
    conn: &Connection,
    client_info: &Implementation,
    wait: Wait<'_>,
) -> Result<(InitializeResult, ProtocolVersion), Error> {
    let params = InitializeParams {
        protocol_version: LATEST_PROTOCOL_VERSION.to_owned(),
        capabilities: conn.declared.clone(),
        client_info: client_info.clone(),
    };
    let params = serde_json::to_value(params).map_err(|e| Error::protocol(e.to_string()))?;
    let wait = Wait {
        notify_cancel: false,
        ..wait
    };
    let value = conn.request(methods::INITIALIZE, Some(params), wait)?;
    let init: InitializeResult = serde_json::from_value(value)
        .map_err(|e| Error::protocol(format!("invalid initialize result: {e}")))?;
    let parsed = ProtocolVersion::parse(&init.protocol_version).filter(|v| !v.is_stateless());
    let Some(version) = parsed else {
        return Err(Error::UnsupportedProtocolVersion {
            requested: LATEST_PROTOCOL_VERSION.to_owned(),
            received: init.protocol_version,
        });
    };
    conn.envelopes.settle(Some(version));
    conn.notify(methods::INITIALIZED, None)?;
    // A server stream (HTTP's GET) only when something may come on it: a server that declared
    // nothing it sends unasked, talking to a client that offers nothing to ask, has nothing to
    // say outside its responses, and the stream would cost a connection and a thread on both
    // sides.
    if init.capabilities.may_notify() || conn.declared.invites_requests() {
        conn.transport.on_ready();
    }
    log::debug!(
        "[{}] connected to {} {} (protocol {version})",
        conn.name,
        init.server_info.name,
        init.server_info.version
    );
    Ok((init, version))
}
