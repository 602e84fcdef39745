//! What a connection trusts and presents in a build without the `tls` feature: nothing. A
//! connection that would speak TLS (an `https://` server or proxy) or that names TLS files of
//! its own (`caFile`, `clientCert`, `clientKey`) fails with [`Error::FeatureMissing`] before
//! anything is sent; plain `http://` connections are made as in the full build. The interface
//! is `tls`'s (the module this one stands in for), so the HTTP plumbing and OAuth's requests
//! are the same in both builds.

use std::sync::{Arc, OnceLock};

use ureq::config::ConfigBuilder;
use ureq::typestate::AgentScope;
use ureq::unversioned::transport::{ConnectionDetails, Connector, Transport};

use super::target::TlsSettings;
use crate::error::Error;

/// A connection's TLS: none.
#[derive(Debug, Default)]
pub(crate) struct Tls;

impl Tls {
    /// The last connector of `stack::connections`: passes the plain connection on.
    pub(crate) fn connector(&self) -> SharedTls {
        SharedTls
    }
}

/// The connector in TLS's place: hands the TCP connection on as it is, and refuses an
/// `https://` one (which `settle` has refused already; this is the backstop).
#[derive(Debug)]
pub(crate) struct SharedTls;

impl<In: Transport> Connector<In> for SharedTls {
    type Out = In;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<In>, ureq::Error> {
        if details.needs_tls() {
            return Err(ureq::Error::TlsRequired);
        }
        Ok(chained)
    }
}

/// Applies a connection's TLS to its agent's config: nothing to apply.
pub(crate) fn configure(
    builder: ConfigBuilder<AgentScope>,
    _tls: &Tls,
) -> ConfigBuilder<AgentScope> {
    builder
}

/// The TLS of a connection with `settings`: an error when it needs TLS (`needs_tls`: an https
/// server or proxy) or names TLS files of its own, which this build cannot use.
pub(crate) fn settle(settings: &TlsSettings, needs_tls: bool) -> Result<Arc<Tls>, Error> {
    if needs_tls {
        return Err(Error::feature_missing(
            "tls",
            "a connection to an https:// server or through an https:// proxy",
        ));
    }
    for (set, what) in [
        (settings.ca_file.is_some(), "a server's caFile"),
        (settings.client_cert.is_some(), "a server's clientCert"),
        (settings.client_key.is_some(), "a server's clientKey"),
    ] {
        if set {
            return Err(Error::feature_missing("tls", what));
        }
    }
    static PLAIN: OnceLock<Arc<Tls>> = OnceLock::new();
    Ok(Arc::clone(PLAIN.get_or_init(Arc::default)))
}

/// What a TLS failure asks of the user: there are none in this build.
pub(crate) fn hint(_why: &str) -> &'static str {
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_is_refused_with_the_feature_named() {
        let e = settle(&TlsSettings::default(), true).unwrap_err();
        assert!(
            matches!(e, Error::FeatureMissing { feature: "tls", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("\"tls\" feature"), "{e}");
        let with_cert = TlsSettings {
            client_cert: Some("/c.pem".into()),
            ..TlsSettings::default()
        };
        let e = settle(&with_cert, false).unwrap_err().to_string();
        assert!(e.contains("clientCert"), "{e}");
    }

    #[test]
    fn an_https_server_is_refused_before_anything_is_sent() {
        use crate::transport::web::Wire;
        use crate::transport::{HttpOptions, HttpTarget};
        let options = HttpOptions::default();
        let Err(e) = Wire::new(&HttpTarget::new("https://mcp.example.test/mcp"), &options) else {
            panic!("an https server got a connection");
        };
        assert!(
            matches!(e, Error::FeatureMissing { feature: "tls", .. }),
            "{e}"
        );
        let plain = HttpTarget {
            proxy: Some("direct".into()),
            ..HttpTarget::new("http://127.0.0.1:9/mcp")
        };
        assert!(Wire::new(&plain, &options).is_ok());
    }

    #[test]
    fn a_plain_connection_is_made() {
        let host_ca = TlsSettings {
            default_ca_file: Some("/does/not/exist.pem".into()),
            ..TlsSettings::default()
        };
        assert!(settle(&host_ca, false).is_ok());
    }
}
