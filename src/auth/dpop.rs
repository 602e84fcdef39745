//! DPoP (RFC 9449; SEP-1932, `io.modelcontextprotocol/auth/dpop`): access tokens bound to a key
//! the client holds, so that a stolen token is useless without it.
//!
//! - The key: an ES256 (P-256) pair made with `ring`, one per login, kept with the tokens in the
//!   auth store (a 0600 file) as its PKCS#8 bytes. It never reaches a log, an error or `Debug`.
//! - A proof (a `dpop+jwt` signed by the key, its public half in the header) goes with every
//!   token request and every request to the MCP server: `htm` the method, `htu` the URL without
//!   its query and fragment, `iat` now, a fresh `jti`, the server's latest `nonce` when it sent
//!   one, and with a token `ath`, the token's SHA-256.
//! - Nonces (`DPoP-Nonce` in any answer) are remembered per origin; a `use_dpop_nonce` error
//!   (a token endpoint's `400`, a resource's `401`) is retried once with the new one.
//! - When: the authorization server lists ES256 in `dpop_signing_alg_values_supported` and the
//!   config's `dpop` is not `off`; `require` refuses an authorization server that does not.
//!
//! This file is the sans-IO part: keys, proofs, nonces, the mode.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use parking_lot::Mutex;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use super::{error, OAuthErrorKind};
use crate::error::Error;

/// The config's `dpop`: when tokens are bound to a key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum DpopMode {
    /// When the authorization server supports it (the default).
    #[default]
    Auto,
    /// Always: an authorization server that does not support it is refused.
    Require,
    /// Never: plain bearer tokens.
    Off,
}

impl DpopMode {
    /// `"auto"`, `"require"` (or `true`), `"off"` (or `false`).
    pub(crate) fn parse(value: &Value) -> Option<DpopMode> {
        match value {
            Value::Bool(true) => Some(DpopMode::Require),
            Value::Bool(false) => Some(DpopMode::Off),
            Value::String(s) => match s.to_ascii_lowercase().as_str() {
                "auto" => Some(DpopMode::Auto),
                "require" | "required" => Some(DpopMode::Require),
                "off" | "never" => Some(DpopMode::Off),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The algorithm this client signs proofs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// A proof key. `Debug` shows nothing of it.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    /// The public key as a JWK.
    jwk: Value,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DpopKey")
    }
}

fn key_error() -> Error {
    error(OAuthErrorKind::Config, "the DPoP key could not be made")
}

impl DpopKey {
    /// A new key.
    pub(crate) fn generate() -> Result<DpopKey, Error> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| key_error())?;
        DpopKey::from_pkcs8(pkcs8.as_ref()).ok_or_else(key_error)
    }

    /// The key kept with a login (see [`DpopKey::stored`]); `None` if it is not one.
    pub(crate) fn from_stored(text: &str) -> Option<DpopKey> {
        DpopKey::from_pkcs8(&URL_SAFE_NO_PAD.decode(text).ok()?)
    }

    fn from_pkcs8(pkcs8: &[u8]) -> Option<DpopKey> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng).ok()?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return None;
        }
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Some(DpopKey {
            pair,
            pkcs8: pkcs8.to_vec(),
            jwk,
        })
    }

    /// The key as it is kept with the tokens.
    pub(crate) fn stored(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// A proof for one request: `method` to `url`, with the server's `nonce` and the
    /// `access_token` it presents, if any.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, Error> {
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let mut claims = json!({
            "jti": super::pkce::random_string(16)?,
            "htm": method,
            "htu": htu(url),
            "iat": super::now_ms() / 1000,
        });
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        if let Some(token) = access_token {
            let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(digest.as_ref()));
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| error(OAuthErrorKind::Config, "a DPoP proof could not be signed"))?;
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// What a token request's proof is made with: the login's key and the nonces seen.
#[derive(Clone, Copy)]
pub(crate) struct Dpop<'a> {
    pub(crate) key: &'a DpopKey,
    pub(crate) nonces: &'a Nonces,
}

/// The `error` code of an OAuth error body, if it is one.
pub(crate) fn error_code(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error")?.as_str().map(str::to_owned)
}

/// A URL as `htu` names it: without its query and fragment.
pub(crate) fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// The origin (`scheme://host[:port]`, a default port left out) of a URL, as nonces are kept.
pub(crate) fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let mut authority = authority.to_ascii_lowercase();
    let default = if scheme == "https" { ":443" } else { ":80" };
    if authority.ends_with(default) {
        authority.truncate(authority.len() - default.len());
    }
    format!("{scheme}://{authority}")
}

/// The latest `DPoP-Nonce` of each origin.
#[derive(Default)]
pub(crate) struct Nonces(Mutex<Vec<(String, String)>>);

impl Nonces {
    /// The nonce `url`'s origin sent last.
    pub(crate) fn get(&self, url: &str) -> Option<String> {
        let origin = origin(url);
        let nonces = self.0.lock();
        nonces
            .iter()
            .find(|(o, _)| *o == origin)
            .map(|(_, n)| n.clone())
    }

    /// Remembers `url`'s origin's nonce; true if it is a new one.
    pub(crate) fn set(&self, url: &str, nonce: &str) -> bool {
        let origin = origin(url);
        let mut nonces = self.0.lock();
        match nonces.iter_mut().find(|(o, _)| *o == origin) {
            Some((_, n)) if n == nonce => false,
            Some((_, n)) => {
                *n = nonce.to_owned();
                true
            }
            None => {
                // A handful of origins per server: the MCP server and its authorization server.
                if nonces.len() >= 16 {
                    nonces.remove(0);
                }
                nonces.push((origin, nonce.to_owned()));
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(jwt: &str, i: usize) -> Value {
        let text = jwt.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_names_the_request_and_verifies_with_its_public_key() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://mcp.test/mcp?x=1#f",
                Some("n0nce"),
                Some("the-token"),
            )
            .unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.test/mcp");
        assert_eq!(claims["nonce"], "n0nce");
        let digest = ring::digest::digest(&ring::digest::SHA256, b"the-token");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(digest.as_ref()));
        // The signature verifies with the key in the header.
        let point = key.pair.public_key().as_ref().to_vec();
        let input = proof.rsplit_once('.').unwrap().0;
        let signature = URL_SAFE_NO_PAD
            .decode(proof.rsplit_once('.').unwrap().1)
            .unwrap();
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(input.as_bytes(), &signature)
            .unwrap();
        // Each proof is fresh.
        let again = key
            .proof("POST", "https://mcp.test/mcp", None, None)
            .unwrap();
        assert_ne!(part(&again, 1)["jti"], claims["jti"]);
        assert!(part(&again, 1).get("ath").is_none());
    }

    #[test]
    fn a_stored_key_is_the_same_key_and_debug_shows_none_of_it() {
        let key = DpopKey::generate().unwrap();
        let stored = key.stored();
        let back = DpopKey::from_stored(&stored).unwrap();
        assert_eq!(back.jwk, key.jwk);
        assert!(!format!("{key:?}").contains(&stored[..12]));
        assert!(DpopKey::from_stored("not a key").is_none());
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let n = Nonces::default();
        assert!(n.set("https://AS.test/token", "a"));
        assert!(!n.set("https://as.test/other", "a"));
        assert_eq!(n.get("https://as.test/x?y").as_deref(), Some("a"));
        assert_eq!(n.get("https://mcp.test/mcp"), None);
        assert!(n.set("https://as.test/token", "b"));
        assert_eq!(n.get("https://as.test/").as_deref(), Some("b"));
        // A default port, spelled out or not, is the same origin.
        assert!(!n.set("https://as.test:443/token", "b"));
        assert_eq!(
            n.get("http://mcp.test:80/mcp"),
            n.get("http://mcp.test/mcp")
        );
        assert_ne!(origin("http://h:8080/x"), origin("http://h/x"));
    }

    #[test]
    fn modes() {
        assert_eq!(DpopMode::parse(&json!("require")), Some(DpopMode::Require));
        assert_eq!(DpopMode::parse(&json!(false)), Some(DpopMode::Off));
        assert_eq!(DpopMode::parse(&json!("Auto")), Some(DpopMode::Auto));
        assert_eq!(DpopMode::parse(&json!("sometimes")), None);
    }
}
