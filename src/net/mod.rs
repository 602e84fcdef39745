//! The network under the HTTP transports and the OAuth client: URLs and the redaction of their
//! secrets, the choice of a proxy, TLS, the socket (TCP, a Unix socket, a Windows named pipe),
//! the one HTTP/1.1 exchange every request goes through and the aborts that cut it short, the
//! library's own one-shot requests on it ([`fetch`]), what a host says about a remote server
//! ([`target`]), and the request head the loopback servers read. Used by the transports, auth,
//! the config layer and the installer; it uses none of them.

pub(crate) mod abort;
pub(crate) mod exchange;
pub(crate) mod fetch;
pub(crate) mod http1;
#[cfg(windows)]
mod named_pipe;
pub(crate) mod proxy;
pub(crate) mod request_head;
pub(crate) mod secrets;
pub(crate) mod socket;
pub(crate) mod stack;
pub(crate) mod target;
pub(crate) mod tcp;
#[cfg(feature = "tls")]
pub(crate) mod tls;
#[cfg(feature = "tls")]
mod tls_check;
#[cfg(not(feature = "tls"))]
pub(crate) mod tls_off;
#[cfg(not(feature = "tls"))]
pub(crate) use tls_off as tls;
pub(crate) mod url;
