//! Signed JWTs (RFC 7519) for `private_key_jwt` client authentication and client assertions
//! (RFC 7523): ES256 (ECDSA P-256) and RS256 (RSA PKCS#1 v1.5 with SHA-256), signed by `ring`
//! with a PKCS#8 key (PEM or DER; RSA keys may also be PKCS#1).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::{json, Value};

use super::{error, OAuthErrorKind};
use crate::error::Error;

/// How a client assertion is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256 (the default).
    #[default]
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl SigningAlgorithm {
    /// Its JOSE name (`ES256`, `RS256`).
    pub fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Rs256 => "RS256",
        }
    }

    /// Parses a JOSE name (case-insensitive).
    pub fn parse(name: &str) -> Option<SigningAlgorithm> {
        match name.to_ascii_uppercase().as_str() {
            "ES256" => Some(SigningAlgorithm::Es256),
            "RS256" => Some(SigningAlgorithm::Rs256),
            _ => None,
        }
    }
}

/// Both boxed: the two key pairs differ in size by several times, and a key is made once.
enum Pair {
    Ec(Box<EcdsaKeyPair>),
    Rsa(Box<RsaKeyPair>),
}

/// A private key that signs client assertions. Its `Debug` shows the algorithm only.
pub(crate) struct SigningKey {
    pair: Pair,
    key_id: Option<String>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm())
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

fn bad_key(why: &str) -> Error {
    error(
        OAuthErrorKind::Config,
        format!("the OAuth private key is not usable: {why}"),
    )
}

impl SigningKey {
    /// A key from the bytes of a key file: PEM (`PRIVATE KEY`, or `RSA PRIVATE KEY` for RS256)
    /// or DER.
    pub fn from_bytes(bytes: &[u8], algorithm: SigningAlgorithm) -> Result<SigningKey, Error> {
        let (label, der) = match std::str::from_utf8(bytes) {
            Ok(text) if text.contains("-----BEGIN") => pem(text)?,
            _ => (String::from("PRIVATE KEY"), bytes.to_vec()),
        };
        let rng = SystemRandom::new();
        let pair = match (algorithm, label.as_str()) {
            (SigningAlgorithm::Es256, "PRIVATE KEY") => Pair::Ec(Box::new(
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                    .map_err(|_| bad_key("not a PKCS#8 P-256 key (ES256)"))?,
            )),
            (SigningAlgorithm::Es256, "EC PRIVATE KEY") => {
                return Err(bad_key(
                    "a SEC1 EC key; convert it with `openssl pkcs8 -topk8 -nocrypt`",
                ))
            }
            (SigningAlgorithm::Rs256, "PRIVATE KEY") => Pair::Rsa(Box::new(
                RsaKeyPair::from_pkcs8(&der)
                    .map_err(|_| bad_key("not a PKCS#8 RSA key (RS256)"))?,
            )),
            (SigningAlgorithm::Rs256, "RSA PRIVATE KEY") => Pair::Rsa(Box::new(
                RsaKeyPair::from_der(&der).map_err(|_| bad_key("not a PKCS#1 RSA key (RS256)"))?,
            )),
            (_, other) => {
                return Err(bad_key(&format!(
                    "a PEM {other:?} block, not a private key"
                )))
            }
        };
        Ok(SigningKey { pair, key_id: None })
    }

    /// Reads a key file.
    pub fn from_file(
        path: &std::path::Path,
        algorithm: SigningAlgorithm,
    ) -> Result<SigningKey, Error> {
        let bytes = std::fs::read(path).map_err(|e| {
            error(
                OAuthErrorKind::Config,
                format!("cannot read the OAuth private key {}: {e}", path.display()),
            )
        })?;
        SigningKey::from_bytes(&bytes, algorithm)
    }

    /// Sets the `kid` put in the JWT header.
    pub fn with_key_id(mut self, kid: impl Into<String>) -> SigningKey {
        self.key_id = Some(kid.into());
        self
    }

    /// The algorithm.
    pub fn algorithm(&self) -> SigningAlgorithm {
        match self.pair {
            Pair::Ec(_) => SigningAlgorithm::Es256,
            Pair::Rsa(_) => SigningAlgorithm::Rs256,
        }
    }

    /// A compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> Result<String, Error> {
        let mut header = json!({"alg": self.algorithm().name(), "typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = json!(kid);
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let sig = match &self.pair {
            Pair::Ec(k) => k
                .sign(&rng, input.as_bytes())
                .map_err(|_| bad_key("signing failed"))?
                .as_ref()
                .to_vec(),
            Pair::Rsa(k) => {
                let mut sig = vec![0u8; k.public().modulus_len()];
                k.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .map_err(|_| bad_key("signing failed"))?;
                sig
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }

    /// A client assertion (RFC 7523 §3): `iss` = `sub` = the client id, `aud` = the
    /// authorization server (its issuer, and the token endpoint), a fresh `jti`, five minutes.
    pub fn client_assertion(&self, client_id: &str, audience: &[&str]) -> Result<String, Error> {
        let now = super::now_ms() / 1000;
        let aud = if audience.len() == 1 {
            json!(audience[0])
        } else {
            json!(audience)
        };
        self.sign(&json!({
            "iss": client_id,
            "sub": client_id,
            "aud": aud,
            "iat": now,
            "exp": now + 300,
            "jti": super::pkce::random_string(16)?,
        }))
    }
}

/// The label and DER bytes of the first PEM block.
fn pem(text: &str) -> Result<(String, Vec<u8>), Error> {
    let begin = text
        .find("-----BEGIN ")
        .ok_or_else(|| bad_key("no PEM block"))?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let label_end = rest
        .find("-----")
        .ok_or_else(|| bad_key("a broken PEM header"))?;
    let label = rest[..label_end].to_owned();
    let body_start = label_end + 5;
    let end_marker = format!("-----END {label}-----");
    // Searched after the header, which it may otherwise overlap (`-----BEGIN X-----END X-----`).
    let body = rest.get(body_start..).unwrap_or_default();
    let body_end = body
        .find(&end_marker)
        .ok_or_else(|| bad_key("no PEM end line"))?;
    let body: String = body[..body_end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if body.contains(':') {
        return Err(bad_key("an encrypted PEM key; decrypt it first"));
    }
    let der = STANDARD
        .decode(body)
        .map_err(|_| bad_key("the PEM body is not base64"))?;
    Ok((label, der))
}

#[cfg(test)]
mod tests {
    use super::*;

    use ring::signature::KeyPair as _;

    #[test]
    fn a_pem_end_that_overlaps_its_header_is_an_error() {
        assert!(pem("-----BEGIN X-----END X-----").is_err());
        assert!(pem("-----BEGIN -----END -----").is_err());
    }

    fn es256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.as_ref(),
            &rng,
        )
        .unwrap();
        let b64 = STANDARD.encode(pkcs8.as_ref());
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        (
            format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                lines.join("\n")
            ),
            pair.public_key().as_ref().to_vec(),
        )
    }

    #[test]
    fn es256_signatures_verify() {
        let (pem, public) = es256_pem();
        let key = SigningKey::from_bytes(pem.as_bytes(), SigningAlgorithm::Es256)
            .unwrap()
            .with_key_id("k1");
        let jwt = key.client_assertion("client", &["https://as"]).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "k1");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["sub"], "client");
        assert_eq!(claims["aud"], "https://as");
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &public)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
        assert!(!format!("{key:?}").contains("PRIVATE"));
    }

    #[test]
    fn rs256_signatures_verify_from_pkcs8_and_pkcs1() {
        for pem in [
            &include_bytes!("../../tests/data/oauth-rs256.pem")[..],
            &include_bytes!("../../tests/data/oauth-rs256-pkcs1.pem")[..],
        ] {
            let key = SigningKey::from_bytes(pem, SigningAlgorithm::Rs256).unwrap();
            let Pair::Rsa(pair) = &key.pair else { panic!() };
            let jwt = key.sign(&json!({"sub": "x"})).unwrap();
            let (input, sig) = jwt.rsplit_once('.').unwrap();
            signature::UnparsedPublicKey::new(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                pair.public().as_ref(),
            )
            .verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(sig).unwrap())
            .unwrap();
        }
    }

    #[test]
    fn unusable_keys_are_clear_errors() {
        let (pem, _) = es256_pem();
        let e = SigningKey::from_bytes(pem.as_bytes(), SigningAlgorithm::Rs256).unwrap_err();
        assert!(e.to_string().contains("RSA"), "{e}");
        let e = SigningKey::from_bytes(
            b"-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----",
            SigningAlgorithm::Es256,
        )
        .unwrap_err();
        assert!(e.to_string().contains("pkcs8"), "{e}");
        assert!(SigningKey::from_bytes(b"junk", SigningAlgorithm::Es256).is_err());
    }
}
