//! Where a connection's server is, as the conventions name it: `network.transport`, and for a
//! server on the network its `server.address` and `server.port` (never a URL's path or query).

/// The server's side of a connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Peer {
    /// `pipe` (stdio, a named pipe), `tcp` or `unix`; `None` for a transport of the host's.
    pub(crate) transport: Option<&'static str>,
    /// The host name or address, or the socket's path.
    pub(crate) address: Option<String>,
    /// The port, for TCP.
    pub(crate) port: Option<u16>,
    /// Whether requests go as HTTP (their headers carry the trace context too).
    pub(crate) http: bool,
}

impl Peer {
    /// A local process over its stdin and stdout.
    pub(crate) fn stdio() -> Peer {
        Peer {
            transport: Some("pipe"),
            ..Peer::default()
        }
    }

    /// An HTTP server at `url` (`http(s)://`, `unix://`, `pipe://`).
    pub(crate) fn url(url: &str) -> Peer {
        if let Some(Ok(local)) = crate::net::url::local(url) {
            let transport = match &local.socket {
                crate::net::socket::Local::Unix(_) => "unix",
                crate::net::socket::Local::Pipe(_) => "pipe",
            };
            let address = local.socket.shown();
            return Peer {
                transport: Some(transport),
                address: Some(address),
                port: None,
                http: true,
            };
        }
        match crate::net::url::Url::parse(url) {
            Ok(u) => Peer {
                transport: Some("tcp"),
                port: Some(u.port.unwrap_or(if u.scheme == "https" { 443 } else { 80 })),
                address: Some(
                    u.host
                        .trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_owned(),
                ),
                http: true,
            },
            Err(_) => Peer {
                transport: Some("tcp"),
                http: true,
                ..Peer::default()
            },
        }
    }
}
