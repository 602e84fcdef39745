//! Where OAuth credentials live: the [`AuthStorage`] trait a provider reads and writes through,
//! the [`Credential`] it stores, and the exclusive hold a refresh keeps. The file-backed store
//! (mode 0600, shared safely between processes) is the config layer's
//! `config::FileAuthStorage`.
//!
//! Several processes may share one store (the CLI and a host, two hosts). An authorization
//! server that rotates refresh tokens treats a second use of one as theft and revokes the whole
//! grant (OAuth 2.1 §4.3.1), so a refresh holds [`AuthStorage::exclusive`] from reading the
//! stored refresh token to storing its successor.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Error;
/// One stored credential.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    /// The access token.
    pub access_token: String,
    /// When it expires (milliseconds since the Unix epoch), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The refresh token, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Anything else (token endpoint, client id, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token.
        f.debug_struct("Credential")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Where OAuth credentials live.
pub trait AuthStorage: Send + Sync {
    /// The credential stored under `id`.
    fn get(&self, id: &str) -> Option<Credential>;
    /// Stores (or replaces) a credential.
    fn set(&self, id: &str, credential: Credential) -> Result<(), Error>;
    /// Forgets a credential.
    fn remove(&self, id: &str) -> Result<(), Error>;

    /// Holds off every other holder of this store's exclusive hold (in this process and, for a
    /// store other processes share, in those) until the returned guard is dropped, waiting at
    /// most `bound` for it. A refresh holds it from reading the stored refresh token to storing
    /// the next. The default does nothing: a store no other process reads needs nothing more
    /// than the provider's own serialisation.
    fn exclusive(&self, bound: Duration) -> Result<Box<dyn Send>, Error> {
        let _ = bound;
        Ok(Box::new(()))
    }
}
