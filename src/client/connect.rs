//! Opening a connection: the transport an [`Endpoint`] names (or a [`Connector`] builds), the
//! era it settles, the fallback from Streamable HTTP to legacy SSE for a bare URL, and what a
//! failed attempt leaves to close.

use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Instant;

use super::era::{self, Envelopes};
use super::{Client, ConnectOptions, Connection, Endpoint, Router};
use serde_json::Value;

use crate::error::Error;
use crate::telemetry::Peer;
use crate::transport::{
    Connector, HttpTransport, Inbound, SseTransport, StdioTransport, Transport,
};

/// Where the server of `endpoint` is, for telemetry.
fn peer(endpoint: &Endpoint) -> Peer {
    match endpoint {
        Endpoint::Stdio(_) => Peer::stdio(),
        Endpoint::Http(target) | Endpoint::Url(target) | Endpoint::Sse(target) => {
            Peer::url(&target.url)
        }
    }
}

/// A connect's outcome on its span.
fn traced(connecting: crate::telemetry::Connecting, outcome: &Result<Client, ConnectFailure>) {
    connecting.finish(match outcome {
        Ok(client) => Ok(client.protocol_version().as_str()),
        Err(failure) => Err(&failure.error),
    });
}

impl Connection {
    fn open(
        name: &str,
        endpoint: &Endpoint,
        options: &ConnectOptions,
        deadline: Instant,
    ) -> Result<Connection, Error> {
        Connection::build(name, options, peer(endpoint), |inbound| {
            let transport: Arc<dyn Transport> = match endpoint {
                Endpoint::Stdio(cmd) => {
                    Arc::new(StdioTransport::spawn(name, cmd, &options.stdio, inbound)?)
                }
                Endpoint::Http(target) | Endpoint::Url(target) => {
                    Arc::new(HttpTransport::new(name, target, &options.http, inbound)?)
                }
                Endpoint::Sse(target) => Arc::new(SseTransport::connect(
                    name,
                    target,
                    &options.http,
                    inbound,
                    deadline,
                )?),
            };
            Ok(transport)
        })
    }

    /// A connection over the transport `make` builds around the router.
    fn build(
        name: &str,
        options: &ConnectOptions,
        peer: Peer,
        make: impl FnOnce(Arc<dyn Inbound>) -> Result<Arc<dyn Transport>, Error>,
    ) -> Result<Connection, Error> {
        // The host's callbacks run behind a catch: a panic in one fails what it answered.
        let handler = super::caught::CaughtHandler::wrap(Arc::clone(&options.handler));
        let mut declared = handler.capabilities();
        if !options.extensions.is_empty() {
            let extensions = declared
                .extra
                .entry("extensions")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(map) = extensions {
                for (name, settings) in &options.extensions {
                    map.entry(name.clone()).or_insert_with(|| settings.clone());
                }
            }
        }
        let router = Arc::new(Router::new(name, Arc::clone(&handler), declared.clone()));
        let inbound: Arc<dyn Inbound> = router.clone();
        let transport = make(inbound)?;
        let envelopes = Envelopes::new(transport.kind());
        router.attach(&transport, &envelopes);
        Ok(Connection {
            name: name.to_owned(),
            transport,
            router,
            envelopes,
            next_id: Arc::new(AtomicI64::new(1)),
            declared,
            handler,
            telemetry: crate::telemetry::Session::new(options.telemetry_settings(), peer),
        })
    }
}

impl Client {
    /// Connects to a server: starts it (stdio) and runs the handshake, bounded by
    /// `options.timeout`. On any failure the transport is closed again.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use mcp_runtime::{Client, ConnectOptions, Endpoint};
    ///
    /// let endpoint = Endpoint::http("https://example.com/mcp");
    /// let options = ConnectOptions {
    ///     timeout: Duration::from_secs(10),
    ///     ..ConnectOptions::default()
    /// };
    /// let client = Client::connect("example", &endpoint, options)?;
    /// println!("{} speaks {}", client.server_info().name, client.protocol_version());
    /// # Ok::<(), mcp_runtime::Error>(())
    /// ```
    pub fn connect(
        name: &str,
        endpoint: &Endpoint,
        options: ConnectOptions,
    ) -> Result<Client, Error> {
        Client::connect_leaving(name, endpoint, &options).map_err(ConnectFailure::close)
    }

    /// A stdio server started from `program` and `args`, with the default options: the
    /// common case in one line.
    ///
    /// ```no_run
    /// let client = mcp_runtime::Client::stdio("files", "npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])?;
    /// # Ok::<(), mcp_runtime::Error>(())
    /// ```
    pub fn stdio<I, S>(name: &str, program: impl Into<String>, args: I) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Client::connect(
            name,
            &Endpoint::stdio(program, args),
            ConnectOptions::default(),
        )
    }

    /// [`Client::connect`], but a failure hands back what the attempt started (a process, a
    /// connection) for the caller to close where it suits it: the manager reports the failure
    /// first and tears down after, so a failed handshake never holds its startup gate.
    pub(crate) fn connect_leaving(
        name: &str,
        endpoint: &Endpoint,
        options: &ConnectOptions,
    ) -> Result<Client, ConnectFailure> {
        let started = Instant::now();
        let options = &options.capped();
        // The connect's span: the era probe and the handshake are its children.
        let connecting = crate::telemetry::connecting(name, &peer(endpoint));
        let outcome = Client::connect_fallback(name, endpoint, options, started);
        traced(connecting, &outcome);
        outcome
    }

    /// Streamable HTTP, then legacy SSE when a bare URL's server refuses the first.
    fn connect_fallback(
        name: &str,
        endpoint: &Endpoint,
        options: &ConnectOptions,
        started: Instant,
    ) -> Result<Client, ConnectFailure> {
        match Client::connect_once(name, endpoint, options, started) {
            Err(ConnectFailure {
                error: error @ Error::Http { status, .. },
                leftover,
            }) if matches!(endpoint, Endpoint::Url(_))
                && [400, 404, 405].contains(&status)
                && !era::is_stateless_refusal(&error) =>
            {
                if let Some(leftover) = leftover {
                    leftover.close();
                }
                let Endpoint::Url(target) = endpoint else {
                    unreachable!()
                };
                log::info!(
                    "[{name}] the server answered {status} to Streamable HTTP; trying legacy SSE"
                );
                Client::connect_once(name, &Endpoint::Sse(target.clone()), options, started)
            }
            other => other,
        }
    }

    fn connect_once(
        name: &str,
        endpoint: &Endpoint,
        options: &ConnectOptions,
        started: Instant,
    ) -> Result<Client, ConnectFailure> {
        let deadline = started + options.timeout;
        let open = || {
            Connection::open(name, endpoint, options, deadline).map_err(|e| match e {
                Error::TransportClosed { .. } if Instant::now() >= deadline => {
                    Error::ConnectTimeout {
                        server: name.to_owned(),
                        after: options.timeout,
                        stderr_tail: Vec::new(),
                        skipped_stdout: None,
                    }
                }
                other => other,
            })
        };
        let conn = open().map_err(|error| ConnectFailure {
            error,
            leftover: None,
        })?;
        let probe = match endpoint {
            Endpoint::Stdio(_) => era::ProbeKind::Stdio,
            Endpoint::Http(_) | Endpoint::Url(_) => era::ProbeKind::Http,
            _ => era::ProbeKind::None,
        };
        Client::negotiate(conn, options, started, probe, &open)
    }

    /// Connects over an in-memory pipe ([`memory_pair`](crate::transport::memory_pair)):
    /// an in-process server in tests, or a transport of the host's own that moves messages
    /// between the pipe's [`MemoryServer`](crate::transport::MemoryServer) end and the server.
    /// The handshake runs as for [`Client::connect`], bounded by `options.timeout`.
    pub fn with_transport(
        name: &str,
        connector: crate::transport::MemoryConnector,
        options: ConnectOptions,
    ) -> Result<Client, Error> {
        Client::connect_through(name, &connector, &options).map_err(ConnectFailure::close)
    }

    /// [`Client::with_transport`], leaving what is left to close on failure to the caller
    /// (the manager's [`connector`](crate::manager::ManagerOptions::connector)).
    pub(crate) fn connect_through(
        name: &str,
        connector: &dyn Connector,
        options: &ConnectOptions,
    ) -> Result<Client, ConnectFailure> {
        let started = Instant::now();
        let options = &options.capped();
        let connecting = crate::telemetry::connecting(name, &Peer::default());
        let outcome = Connection::build(name, options, Peer::default(), |inbound| {
            connector.connect(name, inbound)
        })
        .map_err(|error| ConnectFailure {
            error,
            leftover: None,
        })
        .and_then(|conn| {
            let no_reopen = || Err(Error::closed("the transport cannot be reopened"));
            Client::negotiate(conn, options, started, era::ProbeKind::None, &no_reopen)
        });
        traced(connecting, &outcome);
        outcome
    }
}

/// A connect attempt that failed, with what it started still to be closed.
pub(crate) struct ConnectFailure {
    pub(crate) error: Error,
    pub(crate) leftover: Option<Leftover>,
}

impl ConnectFailure {
    /// Closes what the attempt started and gives back its error.
    pub(crate) fn close(self) -> Error {
        if let Some(leftover) = self.leftover {
            leftover.close();
        }
        self.error
    }
}

/// The transport of a failed handshake: still open until [`Leftover::close`] (or its drop).
pub(crate) struct Leftover(pub(super) Arc<dyn Transport>);

impl Leftover {
    /// Closes it (for stdio: stops the process group), bounded by the transport's grace periods.
    pub(crate) fn close(self) {
        self.0.close();
    }
}
