//! What a connection trusts and what it presents: the roots it verifies servers against and the
//! client certificate it shows, for the MCP transports and OAuth alike (one TLS stack; see
//! `stack::connections`).
//!
//! - **Roots**: the operating system's trust store, read once per process when the first TLS
//!   connection is made: on Linux and the BSDs the distribution's bundle and certificate
//!   directory (where an administrator's CA goes, with `update-ca-certificates` or
//!   `update-ca-trust`), on macOS the keychains' trust settings, on Windows the system store;
//!   `SSL_CERT_FILE` and `SSL_CERT_DIR` replace it, as OpenSSL reads them. Where the store
//!   has no certificate at all (a slim container without `ca-certificates`), the bundled
//!   Mozilla roots are used instead. The store replaces the bundled roots rather than adding
//!   to them, so a root an administrator removed stays removed.
//! - **Added CAs**, on top of those roots: the server's `caFile`, the host's
//!   (`HttpOptions::ca_file`) and `NODE_EXTRA_CA_CERTS` (Node's variable, which the people who
//!   run MCP servers already set). A file a config names that cannot be read, or holds no
//!   certificate, fails the connection with a message naming it; `NODE_EXTRA_CA_CERTS` is
//!   only warned about, as Node does.
//! - **A client certificate**: `clientCert` (the certificate, then its chain) and `clientKey`
//!   (an unencrypted PKCS#8, PKCS#1 or SEC1 key), PEM files. An encrypted key is refused with
//!   the command that decrypts it.
//! - There is no setting that turns verification off.
//!
//! The files are read again for every connection (a rotated CA or certificate is used by the
//! next one); connections with the same roots and certificate share one TLS configuration, so a
//! fleet parses the store once, not once per connection. Key material never reaches a log, an
//! error or `Debug`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use ureq::config::ConfigBuilder;
use ureq::tls::{Certificate, ClientCert, PemItem, PrivateKey, RootCerts, TlsConfig};
use ureq::typestate::AgentScope;
use ureq::unversioned::transport::{ConnectionDetails, Connector, RustlsConnector, Transport};

use super::target::TlsSettings;
use crate::error::Error;

/// A connection's TLS: the configuration its agent carries and the connector that applies it.
pub(crate) struct Tls {
    config: TlsConfig,
    connector: Arc<RustlsConnector>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("client_cert", &self.config.client_cert().is_some())
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// The connector (the last of `stack::connections`), shared by every agent with these
    /// settings: it builds the TLS configuration once, from the first agent's `config`.
    pub(crate) fn connector(&self) -> SharedTls {
        SharedTls(Arc::clone(&self.connector))
    }
}

/// `ureq`'s TLS connector, shared (see [`Tls::connector`]).
pub(crate) struct SharedTls(Arc<RustlsConnector>);

impl std::fmt::Debug for SharedTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedTls")
    }
}

impl<In: Transport> Connector<In> for SharedTls {
    type Out = <RustlsConnector as Connector<In>>::Out;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        // `ureq` caches the TLS configuration only for agent-level settings, and rebuilds it
        // (the whole root store) for every connection of a request with settings of its own,
        // which ours all have (their deadlines). Nothing sets TLS per request, so the request's
        // TLS is the agent's: let the connector cache it, and with it resume sessions. Not with
        // a client certificate: OpenSSL servers that verify one without a session id context
        // (socat's, for one) end a resumed session with `internal_error`, so those connections
        // keep a full handshake each.
        if details.config.tls_config().client_cert().is_some() {
            return self.0.connect(details, chained);
        }
        let agent_level = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: false,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: details.current_time.clone(),
            run_connector: details.run_connector.clone(),
            register_shutdown: details.register_shutdown.clone(),
        };
        self.0.connect(&agent_level, chained)
    }
}

/// Applies a connection's TLS to its agent's config (the configuration `tls.connector()`
/// builds from).
pub(crate) fn configure(
    builder: ConfigBuilder<AgentScope>,
    tls: &Tls,
) -> ConfigBuilder<AgentScope> {
    builder.tls_config(tls.config.clone())
}

/// The TLS of a connection with `settings`. `needs_tls`: whether the connection may speak TLS
/// at all (an https server or proxy); when it may not, nothing is read.
pub(crate) fn settle(settings: &TlsSettings, needs_tls: bool) -> Result<Arc<Tls>, Error> {
    static PLAIN: OnceLock<Arc<Tls>> = OnceLock::new();
    if !needs_tls {
        return Ok(Arc::clone(PLAIN.get_or_init(|| {
            Arc::new(Tls {
                config: TlsConfig::default(),
                connector: Arc::default(),
            })
        })));
    }
    let mut extra = Vec::new();
    for (file, whose) in [
        (&settings.ca_file, "the server's caFile"),
        (&settings.default_ca_file, "the host's CA file"),
    ] {
        if let Some(path) = file {
            extra.extend(ca_file(path, whose)?);
        }
    }
    if let Some(path) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|p| !p.is_empty()) {
        match ca_file(Path::new(&path), "NODE_EXTRA_CA_CERTS") {
            Ok(certs) => extra.extend(certs),
            Err(e) => warn_once(&e.to_string()),
        }
    }
    let client = client_cert(settings)?;

    // The same roots and certificate share one configuration (and one parse of the store).
    let mut key = Sha256::new();
    for cert in &extra {
        key.update((cert.der().len() as u64).to_le_bytes());
        key.update(cert.der());
    }
    if let Some(c) = &client {
        key.update(b"client");
        for cert in c.certs() {
            key.update(cert.der());
        }
        key.update(c.private_key().der());
    }
    let key: [u8; 32] = key.finalize().into();
    // Read (once per process) before the lock: no file is read under it.
    let system = system_roots();
    static SHARED: Mutex<Vec<([u8; 32], Weak<Tls>)>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock();
    shared.retain(|(_, tls)| tls.strong_count() > 0);
    if let Some(tls) = shared
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, t)| t.upgrade())
    {
        return Ok(tls);
    }
    let roots = if extra.is_empty() {
        RootCerts::Specific(system)
    } else {
        let mut all = Vec::with_capacity(system.len() + extra.len());
        all.extend(system.iter().cloned());
        all.extend(extra);
        RootCerts::Specific(Arc::new(all))
    };
    let tls = Arc::new(Tls {
        config: TlsConfig::builder()
            .root_certs(roots)
            .client_cert(client)
            .build(),
        connector: Arc::default(),
    });
    shared.push((key, Arc::downgrade(&tls)));
    Ok(tls)
}

/// The operating system's roots (or the bundled ones where it has none), read once.
fn system_roots() -> Arc<Vec<Certificate<'static>>> {
    static ROOTS: OnceLock<Arc<Vec<Certificate<'static>>>> = OnceLock::new();
    Arc::clone(ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        // A store named by SSL_CERT_FILE / SSL_CERT_DIR that cannot be read is the user's
        // mistake, worth a warning; a stray unreadable file in the system's directory is not.
        let named = ["SSL_CERT_FILE", "SSL_CERT_DIR"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()));
        for e in &found.errors {
            if named {
                log::warn!("reading the trust store SSL_CERT_FILE / SSL_CERT_DIR name: {e}");
            } else {
                log::debug!("reading the system's trust store: {e}");
            }
        }
        if found.certs.is_empty() {
            log::warn!(
                "the system's trust store has no certificate (is ca-certificates installed, \
                 or SSL_CERT_FILE / SSL_CERT_DIR wrong?): using the bundled roots"
            );
            return Arc::new(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS
                    .iter()
                    .map(|c| Certificate::from_der(c.as_ref()))
                    .collect(),
            );
        }
        log::debug!("{} roots from the system's trust store", found.certs.len());
        Arc::new(
            found
                .certs
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect(),
        )
    }))
}

/// `~/` is the home directory.
fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => crate::files::home_dir().join(rest),
        Err(_) => path.to_path_buf(),
    }
}

/// A file as bytes, or an error naming it and whose setting it is.
fn read(path: &Path, whose: &str) -> Result<Vec<u8>, Error> {
    let path = expand_home(path);
    std::fs::read(&path).map_err(|e| Error::Config {
        message: format!("{whose} {} cannot be read: {e}", path.display()),
    })
}

/// The certificates of a CA file, each checked to be usable as a root.
fn ca_file(path: &Path, whose: &str) -> Result<Vec<Certificate<'static>>, Error> {
    let certs = pem_certificates(path, whose)?;
    let ders: Vec<&[u8]> = certs.iter().map(Certificate::der).collect();
    let shown = format!("{whose} {}", expand_home(path).display());
    super::tls_check::ca_certificates(&ders, &shown)?;
    Ok(certs)
}

/// The certificates of a PEM file.
fn pem_certificates(path: &Path, whose: &str) -> Result<Vec<Certificate<'static>>, Error> {
    let pem = read(path, whose)?;
    let certs: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(Error::Config {
            message: format!(
                "{whose} {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                expand_home(path).display()
            ),
        });
    }
    Ok(certs)
}

/// The client certificate, with its key: both files or neither.
fn client_cert(settings: &TlsSettings) -> Result<Option<ClientCert>, Error> {
    let (cert, key) = match (&settings.client_cert, &settings.client_key) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        (Some(_), None) => return Err(config("clientCert is set without clientKey")),
        (None, Some(_)) => return Err(config("clientKey is set without clientCert")),
    };
    let chain = pem_certificates(cert, "the clientCert")?;
    let pem = read(key, "the clientKey")?;
    let shown = expand_home(key).display().to_string();
    if is_encrypted(&pem) {
        return Err(config(&format!(
            "the clientKey {shown} is encrypted, which is not supported: decrypt it to a file \
             only you can read (openssl pkey -in {shown} -out key.pem; chmod 600 key.pem) and \
             name that one"
        )));
    }
    // What ureq would panic on is refused here, with the file and the fix.
    let ders: Vec<&[u8]> = chain.iter().map(Certificate::der).collect();
    let cert_shown = expand_home(cert).display().to_string();
    super::tls_check::client_pair(&ders, &pem, &cert_shown, &shown)?;
    let key = PrivateKey::from_pem(&pem).map_err(|_| {
        config(&format!(
            "the clientKey {shown} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)"
        ))
    })?;
    Ok(Some(ClientCert::new_with_certs(&chain, key)))
}

/// Whether a PEM key is encrypted (PKCS#8's `ENCRYPTED PRIVATE KEY`, or OpenSSL's traditional
/// `Proc-Type: 4,ENCRYPTED`).
fn is_encrypted(pem: &[u8]) -> bool {
    let text = String::from_utf8_lossy(pem);
    text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text.contains("Proc-Type: 4,ENCRYPTED")
}

fn config(message: &str) -> Error {
    Error::Config {
        message: message.to_owned(),
    }
}

/// Warns about a message once per process (a variable read at every connection).
fn warn_once(message: &str) {
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut said = SAID.lock();
    if !said.iter().any(|m| m == message) {
        log::warn!("{message}; it is not used");
        said.push(message.to_owned());
    }
}

/// What a TLS failure (`ureq`'s text, `rustls: ...`) asks of the user, if it says.
pub(crate) fn hint(why: &str) -> &'static str {
    if why.contains("invalid peer certificate") {
        if why.contains("UnknownIssuer") || why.contains("BadSignature") {
            return ": the server's TLS certificate is not signed by a CA this client trusts; \
                    to trust a private CA, name its PEM file in the server's caFile (or the \
                    host's CA file, NODE_EXTRA_CA_CERTS, or add it to the system's trust store)";
        }
        if why.contains("NotValidForName") {
            return ": the server's TLS certificate is for another name";
        }
        if why.contains("Expired") || why.contains("NotValidYet") {
            return ": the server's TLS certificate is outside its validity period (or this \
                    clock is wrong)";
        }
        return ": the server's TLS certificate is not valid";
    }
    if why.contains("CertificateRequired") || why.contains("HandshakeFailure") {
        return ": the server may want a TLS client certificate (clientCert and clientKey in \
                its config)";
    }
    if why.contains("BadCertificate")
        || why.contains("UnknownCA")
        || why.contains("AccessDenied")
        || why.contains("CertificateUnknown")
    {
        return ": the server refused the TLS client certificate (clientCert and clientKey)";
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_the_setting() {
        assert!(hint("rustls: invalid peer certificate: UnknownIssuer").contains("caFile"));
        assert!(hint("rustls: invalid peer certificate: NotValidForName").contains("name"));
        assert!(hint("rustls: received fatal alert: CertificateRequired").contains("clientCert"));
        assert!(hint("rustls: received fatal alert: UnknownCA").contains("refused"));
        assert_eq!(hint("connection refused"), "");
    }

    #[test]
    fn encrypted_keys_are_recognised() {
        assert!(is_encrypted(
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMII..."
        ));
        assert!(is_encrypted(
            b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n"
        ));
        assert!(!is_encrypted(b"-----BEGIN PRIVATE KEY-----\nMII..."));
    }

    #[test]
    fn half_a_client_certificate_is_an_error() {
        let only_cert = TlsSettings {
            client_cert: Some("/c.pem".into()),
            ..TlsSettings::default()
        };
        let e = client_cert(&only_cert).unwrap_err().to_string();
        assert!(e.contains("without clientKey"), "{e}");
    }

    #[test]
    fn unreadable_and_empty_files_are_named() {
        let dir = std::env::temp_dir().join(format!("mcp-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = ca_file(&missing, "the server's caFile")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pem") && e.contains("caFile"), "{e}");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate").unwrap();
        let e = ca_file(&empty, "the server's caFile")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_plain_connection_reads_nothing() {
        let settings = TlsSettings {
            ca_file: Some("/does/not/exist.pem".into()),
            ..TlsSettings::default()
        };
        assert!(settle(&settings, false).is_ok());
        assert!(settle(&settings, true).is_err());
    }
}
