//! The era probe's driver: sends what [`Probe`](super::probe::Probe) asks for, feeds back
//! what happened, and ends with a session of either era (respawning the server first when the
//! probe ended it).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::probe::{Probe, ProbeEvent, Step};
use super::stateless::{
    base_meta, is_stateless_refusal, rpc_in_http_body, stamp, typed, Stateless,
};
use super::{handshake, SessionEra};
use crate::client::renewal::Session;
use crate::client::{
    Client, ConnectFailure, ConnectOptions, Connection, EraChoice, Inner, Leftover, Wait,
};
use crate::error::Error;
use crate::protocol::stateless::{
    HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::protocol::{methods, DiscoverResult, InitializeResult, ProtocolVersion};
use crate::transport::Transport;

/// How a connection came to be: its era, the server's self-description, the version.
pub(crate) struct Negotiated {
    pub(crate) era: SessionEra,
    pub(crate) init: InitializeResult,
    pub(crate) version: ProtocolVersion,
    /// The connection it was negotiated on (a fresh one when the probe ended the first).
    pub(crate) conn: Connection,
}

/// A failure, with the transport still to be closed.
pub(crate) type Failed = (Error, Arc<dyn Transport>);

impl Client {
    /// Settles the era on `conn` (see `probe`) and builds the client around the outcome.
    pub(crate) fn negotiate(
        conn: Connection,
        options: &ConnectOptions,
        started: Instant,
        probe: ProbeKind,
        reopen: &dyn Fn() -> Result<Connection, Error>,
    ) -> Result<Client, ConnectFailure> {
        match negotiate(conn, options, started, probe, reopen) {
            Ok(n) => Ok(Client::started(Client {
                inner: Arc::new(Inner {
                    conn: n.conn,
                    request_timeout: options.request_timeout,
                    max_request_timeout: options.max_request_timeout,
                    session: Session::new(n.init, n.version),
                    client_info: options.client_info.clone(),
                    era: n.era,
                    listing: parking_lot::Mutex::new(crate::protocol::Listing::default()),
                    listed_at: parking_lot::Mutex::new(None),
                    task_tools: parking_lot::Mutex::new(HashSet::new()),
                    apps: Default::default(),
                }),
            })),
            Err((error, transport)) => Err(ConnectFailure {
                error,
                leftover: Some(Leftover(transport)),
            }),
        }
    }
}

/// Which probe a transport gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeKind {
    /// None: the handshake (a transport of the caller's, legacy SSE).
    None,
    /// stdio: silence and errors are verdicts; a process the probe ended is started again.
    Stdio,
    /// Streamable HTTP: 401/403, 5xx, network errors and timeouts are errors, not verdicts;
    /// an empty or non-stateless 400, a 404 or a 405 means `initialize`.
    Http,
}

/// Chooses the era on `conn` (probing as `probe` says), then runs that era's opening: nothing
/// more for a stateless server, the handshake for the others. `reopen` starts the server again.
pub(crate) fn negotiate(
    conn: Connection,
    options: &ConnectOptions,
    started: Instant,
    probe: ProbeKind,
    reopen: &dyn Fn() -> Result<Connection, Error>,
) -> Result<Negotiated, Failed> {
    if probe == ProbeKind::None || options.era == EraChoice::Handshake {
        return handshake_on(conn, options, started);
    }
    if let EraChoice::Remembered(version) = options.era {
        if !version.is_stateless() {
            return remembered_handshake(conn, options, started, probe, reopen);
        }
    }
    let deadline = started + options.timeout;
    let (mut machine, mut step) = Probe::start();
    // Whether the server answered anything yet: then silence is no longer a verdict.
    let mut heard = false;
    loop {
        match step {
            Step::Discover(version) => {
                // On stdio silence is a verdict, so it has a short bound; on HTTP it is an
                // outage, bounded like any connect.
                let bound = match probe {
                    ProbeKind::Stdio if !heard => options.probe_timeout,
                    _ => options.timeout,
                };
                let outcome = discover(&conn, options, version, bound, deadline);
                let in_body = match &outcome {
                    Err(e) if probe == ProbeKind::Http => rpc_in_http_body(e),
                    _ => None,
                };
                let outcome = match in_body {
                    Some(rpc) => Err(rpc),
                    None => outcome,
                };
                let event = match &outcome {
                    Ok(value) => ProbeEvent::Answered(value),
                    Err(e @ Error::Rpc { code, .. })
                        if *code == HEADER_MISMATCH
                            || *code == MISSING_REQUIRED_CLIENT_CAPABILITY =>
                    {
                        // Stateless evidence that no other version fixes: never a fallback.
                        return Err((e.clone(), conn.transport));
                    }
                    Err(Error::Http {
                        status: 400 | 404 | 405,
                        ..
                    }) if probe == ProbeKind::Http => ProbeEvent::Refused {
                        code: 0,
                        data: None,
                    },
                    // The connect's own bound ran out during the probe: that is what timed
                    // out (whatever the transport).
                    Err(Error::Timeout { .. }) if Instant::now() >= deadline => {
                        return Err((conn.timed_out(options.timeout), conn.transport));
                    }
                    Err(e) if probe == ProbeKind::Http && !matches!(e, Error::Rpc { .. }) => {
                        // 401/403 (authorize, then probe again), 5xx, network errors and
                        // timeouts are failures, not verdicts.
                        return Err((e.clone(), conn.transport));
                    }
                    Err(Error::Rpc { code, data, .. }) => ProbeEvent::Refused {
                        code: *code,
                        data: data.as_ref(),
                    },
                    Err(Error::Timeout { .. }) => ProbeEvent::Silent,
                    Err(Error::TransportClosed { .. }) => ProbeEvent::Gone,
                    Err(other) => return Err((other.clone(), conn.transport)),
                };
                heard |= matches!(event, ProbeEvent::Answered(_) | ProbeEvent::Refused { .. });
                step = machine.on(event);
            }
            Step::Stateless(version, discover) => {
                tell_era(options, version);
                return Ok(stateless_on(conn, options, version, *discover));
            }
            Step::Handshake { .. } if options.era == EraChoice::Stateless => {
                let error = Error::UnsupportedProtocolVersion {
                    requested: ProtocolVersion::latest_stateless().as_str().to_owned(),
                    received: "a handshake-era server".to_owned(),
                };
                return Err((error, conn.transport));
            }
            Step::Handshake { respawn } => {
                tell_era(options, ProtocolVersion::latest());
                if respawn {
                    log::debug!(
                        "[{}] the server ended during the era probe; starting it again for initialize",
                        conn.name
                    );
                    conn.transport.close();
                    let fresh = match reopen() {
                        Ok(fresh) => fresh,
                        Err(error) => return Err((error, conn.transport)),
                    };
                    return handshake_on(fresh, options, started);
                }
                // `initialize` goes under no version, as a first contact does.
                conn.envelopes.settle(None);
                let error = match handshake::run(&conn, options, started) {
                    Ok((init, version)) => {
                        return Ok(Negotiated {
                            era: SessionEra::Handshake,
                            init,
                            version,
                            conn,
                        })
                    }
                    Err(error) => error,
                };
                // A stateless server that was slow to answer the probe refuses `initialize`
                // naming its versions: discovery again, now that it answers.
                let refusal = unsupported_version_data(&error);
                if let Some(next) =
                    refusal.and_then(|data| machine.on_initialize_refused(data.as_ref()))
                {
                    log::debug!(
                        "[{}] initialize was refused as by a stateless server; discovering again",
                        conn.name
                    );
                    heard = true;
                    step = next;
                    continue;
                }
                return Err(handshake_failure(error, conn));
            }
            Step::Fail(error) => return Err((error, conn.transport)),
        }
    }
}

/// Tells the host's hook (if any) the era the probe found.
fn tell_era(options: &ConnectOptions, version: ProtocolVersion) {
    if let Some(found) = &options.on_era_found {
        found(version);
    }
}

/// The handshake a remembered era asks for; when it fails for a reason a stateless server
/// would give, the assumption is dropped and the server probed on a fresh connection.
fn remembered_handshake(
    conn: Connection,
    options: &ConnectOptions,
    started: Instant,
    probe: ProbeKind,
    reopen: &dyn Fn() -> Result<Connection, Error>,
) -> Result<Negotiated, Failed> {
    let (error, transport) = match handshake_on(conn, options, started) {
        Ok(n) => return Ok(n),
        Err(failed) => failed,
    };
    let assumption_failed = match &error {
        Error::Http { status, .. } => [400, 404, 405].contains(status),
        Error::Rpc { .. }
        | Error::UnsupportedProtocolVersion { .. }
        | Error::TransportClosed { .. }
        | Error::Protocol { .. } => true,
        _ => false,
    };
    if !assumption_failed || Instant::now() >= started + options.timeout {
        return Err((error, transport));
    }
    log::debug!("the remembered handshake failed ({error}); probing the server's era again");
    transport.close();
    let fresh = reopen().map_err(|e| (e, transport))?;
    let detect = ConnectOptions {
        era: EraChoice::Detect,
        ..options.clone()
    };
    negotiate(fresh, &detect, started, probe, reopen)
}

/// `server/discover` at `version`, bounded by `bound` (and the connect deadline).
fn discover(
    conn: &Connection,
    options: &ConnectOptions,
    version: ProtocolVersion,
    bound: std::time::Duration,
    deadline: Instant,
) -> Result<Value, Error> {
    // The probe goes under the version it offers (over HTTP: with the stateless headers).
    conn.envelopes.settle(Some(version));
    let meta = base_meta(version, &conn.declared, &options.client_info);
    let params = stamp(&meta, Value::Object(Map::new()));
    let left = deadline.saturating_duration_since(Instant::now());
    let wait = Wait {
        timeout: bound.min(left),
        hard_deadline: deadline,
        cancel: options.cancel.clone(),
        on_progress: None,
        // A handshake-era server must see nothing but the probe before `initialize`.
        notify_cancel: false,
    };
    conn.request(methods::SERVER_DISCOVER, Some(params), wait)
}

fn handshake_on(
    conn: Connection,
    options: &ConnectOptions,
    started: Instant,
) -> Result<Negotiated, Failed> {
    match handshake::run(&conn, options, started) {
        Ok((init, version)) => Ok(Negotiated {
            era: SessionEra::Handshake,
            init,
            version,
            conn,
        }),
        Err(error) => Err(handshake_failure(error, conn)),
    }
}

/// A failed handshake's error, typed. A stateless server refusing `initialize` (`-32022`, even
/// in an HTTP 400) says which versions it speaks: that is the error, never "not Streamable
/// HTTP".
fn handshake_failure(error: Error, conn: Connection) -> Failed {
    if is_stateless_refusal(&error) || matches!(error, Error::Rpc { .. }) {
        return (typed(methods::INITIALIZE, error), conn.transport);
    }
    (error, conn.transport)
}

/// The `data` of a `-32022` (Unsupported protocol version) refusal, in a JSON-RPC error or an
/// HTTP error's body; `None` for any other error.
fn unsupported_version_data(error: &Error) -> Option<Option<Value>> {
    let in_body = rpc_in_http_body(error);
    match in_body.as_ref().unwrap_or(error) {
        Error::Rpc { code, data, .. } if *code == UNSUPPORTED_PROTOCOL_VERSION => {
            Some(data.clone())
        }
        _ => None,
    }
}

fn stateless_on(
    conn: Connection,
    options: &ConnectOptions,
    version: ProtocolVersion,
    discover: DiscoverResult,
) -> Negotiated {
    conn.envelopes.settle(Some(version));
    let server_info = discover.server_info();
    log::debug!(
        "[{}] connected to {} {} (protocol {version}, stateless)",
        conn.name,
        server_info.name,
        server_info.version
    );
    let mut extra = Map::new();
    if let Some(meta) = &discover.meta {
        extra.insert("_meta".into(), meta.clone());
    }
    let init = InitializeResult {
        protocol_version: version.as_str().to_owned(),
        capabilities: discover.capabilities,
        server_info,
        instructions: discover.instructions,
        extra,
    };
    let era = SessionEra::Stateless(Stateless::new(
        version,
        &conn.declared,
        &options.client_info,
        Arc::clone(&options.handler),
    ));
    Negotiated {
        era,
        init,
        version,
        conn,
    }
}
