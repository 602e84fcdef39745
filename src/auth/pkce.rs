//! PKCE (RFC 7636) with `S256`, and the random values of the flow (`state`, `jti`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

use crate::error::Error;

/// A PKCE pair: the secret verifier and its `S256` challenge.
#[derive(Clone)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    /// A fresh pair (a 43-character verifier from 32 random bytes).
    pub fn generate() -> Result<Pkce, Error> {
        Ok(Pkce::from_verifier(random_string(32)?))
    }

    /// The pair of a given verifier.
    pub fn from_verifier(verifier: String) -> Pkce {
        let challenge = s256(&verifier);
        Pkce {
            verifier,
            challenge,
        }
    }

    /// The verifier (sent only to the token endpoint).
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// The `code_challenge` (`BASE64URL(SHA256(verifier))`).
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce").finish_non_exhaustive()
    }
}

/// `BASE64URL(SHA256(text))`.
pub(crate) fn s256(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

/// `bytes` random bytes from the system, base64url-encoded.
pub(crate) fn random_string(bytes: usize) -> Result<String, Error> {
    let mut buf = vec![0u8; bytes];
    SystemRandom::new().fill(&mut buf).map_err(|_| Error::Io {
        message: "the system random number generator failed".into(),
        kind: None,
    })?;
    Ok(URL_SAFE_NO_PAD.encode(&buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_example() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(p.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(!format!("{p:?}").contains("dBjf"));
    }

    #[test]
    fn fresh_verifiers_differ() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_eq!(a.verifier().len(), 43);
        assert_ne!(a.verifier(), b.verifier());
    }
}
