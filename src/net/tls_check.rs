//! What a config's TLS files hold, checked with rustls's own types before anything is handed
//! them: a client certificate rustls would refuse (an X.509 v1 certificate, a key that is not
//! the certificate's, a key type it cannot sign with) makes `ureq` panic when it builds the
//! connection, so each is a configuration error here first, naming the file and the fix. A CA
//! certificate rustls cannot use as a root is one too (it would be left out silently, and the
//! server's certificate then fails as "unknown issuer").

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::Error;

/// Checks a client certificate chain (end entity first) and its key, as PEM, the way rustls
/// will use them. `cert` and `key` are the files as shown in errors.
pub(crate) fn client_pair(
    chain: &[&[u8]],
    key_pem: &[u8],
    cert: &str,
    key: &str,
) -> Result<(), Error> {
    let Some(first) = chain.first() else {
        return Err(config(format!(
            "the clientCert {cert} holds no certificate"
        )));
    };
    match x509_version(first) {
        Some(3) => {}
        Some(v) => {
            return Err(config(format!(
                "the clientCert {cert} is an X.509 v{v} certificate, which TLS cannot use \
                 (only v3): reissue it with an extension file, e.g. `openssl x509 -req -in \
                 cli.csr -CA ca.pem -CAkey ca.key -out cli.pem -extfile <(printf \
                 'basicConstraints=CA:FALSE\\nextendedKeyUsage=clientAuth')`"
            )))
        }
        None => {
            return Err(config(format!(
                "the clientCert {cert} does not hold a well-formed X.509 certificate"
            )))
        }
    }
    let private = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| {
        config(format!(
            "the clientKey {key} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)"
        ))
    })?;
    // The provider ureq builds its connections with (deprecated only for want of
    // post-quantum key exchange, which loading a key does not involve).
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    if provider
        .key_provider
        .load_private_key(private.clone_key())
        .is_err()
    {
        return Err(config(format!(
            "the clientKey {key} is a key TLS cannot sign with here (RSA, ECDSA P-256 or \
             P-384, and Ed25519 keys can)"
        )));
    }
    let certs: Vec<CertificateDer<'static>> = chain
        .iter()
        .map(|der| CertificateDer::from(der.to_vec()))
        .collect();
    match rustls::sign::CertifiedKey::from_der(certs, private, &provider) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => Err(config(
            format!("the clientKey {key} is not the key of the clientCert {cert}"),
        )),
        Err(e) => Err(config(format!(
            "the clientCert {cert} cannot be used with the clientKey {key}: {e}"
        ))),
    }
}

/// Checks that each certificate of a CA file can be a root; `file` as shown in errors.
pub(crate) fn ca_certificates(certs: &[&[u8]], file: &str) -> Result<(), Error> {
    for (i, der) in certs.iter().enumerate() {
        let mut store = rustls::RootCertStore::empty();
        if let Err(e) = store.add(CertificateDer::from(der.to_vec())) {
            return Err(config(format!(
                "{file}: its certificate number {} cannot be used as a CA: {e}",
                i + 1
            )));
        }
    }
    Ok(())
}

fn config(message: String) -> Error {
    Error::Config { message }
}

/// The X.509 version of a DER certificate (1, 2 or 3), or `None` when it is not one: a
/// `Certificate` SEQUENCE whose `TBSCertificate` SEQUENCE starts with `[0] EXPLICIT Version`
/// (absent: v1).
fn x509_version(der: &[u8]) -> Option<u8> {
    let (tag, certificate, _) = tlv(der)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, tbs, _) = tlv(certificate)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, version, _) = tlv(tbs)?;
    if tag != 0xa0 {
        return Some(1);
    }
    match tlv(version)? {
        (0x02, [v @ 0..=2], _) => Some(v + 1),
        _ => None,
    }
}

/// One DER tag-length-value: its tag, its value and what follows it.
fn tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER element of `tag` around `value` (short or long length).
    fn element(tag: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        match value.len() {
            n if n < 0x80 => out.push(n as u8),
            n => {
                out.push(0x82);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        out.extend_from_slice(value);
        out
    }

    #[test]
    fn the_version_of_a_certificate() {
        let serial = element(0x02, &[1]);
        let v1 = element(0x30, &element(0x30, &serial));
        assert_eq!(x509_version(&v1), Some(1));
        let mut tbs = element(0xa0, &element(0x02, &[2]));
        tbs.extend_from_slice(&serial);
        tbs.extend_from_slice(&element(0x30, &[0x05, 0x00].repeat(100)));
        let v3 = element(0x30, &element(0x30, &tbs));
        assert_eq!(x509_version(&v3), Some(3));
        assert_eq!(x509_version(b"not der"), None);
        assert_eq!(x509_version(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(x509_version(&[]), None);
    }

    #[test]
    fn nothing_that_is_not_a_certificate_or_key_passes() {
        let e = client_pair(&[b"junk"], b"", "c.pem", "k.pem").unwrap_err();
        assert!(e.to_string().contains("c.pem"), "{e}");
        let e = client_pair(&[], b"", "c.pem", "k.pem").unwrap_err();
        assert!(e.to_string().contains("no certificate"), "{e}");
        let e = ca_certificates(&[b"junk"], "the server's caFile ca.pem").unwrap_err();
        assert!(e.to_string().contains("ca.pem"), "{e}");
    }
}
