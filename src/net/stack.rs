//! The one connection stack every HTTP exchange of the crate runs on.

use std::sync::Arc;

/// The connections every HTTP exchange of the crate runs on, the MCP transports' and OAuth's:
/// a tunnel through the proxy when the config names one (`CONNECT`, its own connection to the
/// proxy made by this same stack), our TCP (fewer system calls per request, the host resolved
/// when a connection opens, aborts: see `tcp`), then TLS for https with the connection's roots
/// and client certificate (see `tls`; the config must carry the same
/// [`Tls`](super::tls::Tls)'s `config`).
/// Whatever a network asks of a connection is added here, once.
pub(crate) type Connections = ureq::unversioned::transport::ChainedConnector<
    (),
    ureq::unversioned::transport::ChainedConnector<
        (),
        ureq::unversioned::transport::ChainedConnector<
            (),
            (),
            ureq::unversioned::transport::ConnectProxyConnector,
        >,
        super::tcp::Tcp,
    >,
    super::tls::SharedTls,
>;

/// The connection stack (see [`Connections`]); its resolver is [`ResolveOnConnect`](super::tcp::ResolveOnConnect).
/// `via`: the address of a proxy the requests are forwarded to; `local`: the Unix socket or
/// named pipe the server listens on (see `transport::web::Wire`).
pub(crate) fn connections(
    tls: &super::tls::Tls,
    via: Option<ureq::http::Uri>,
    local: Option<Arc<super::socket::Local>>,
) -> Connections {
    use ureq::unversioned::transport::{ConnectProxyConnector, Connector};
    ().chain(ConnectProxyConnector::default())
        .chain(super::tcp::Tcp { via, local })
        .chain(tls.connector())
}
