//! OAuth credentials for servers whose config says `"auth": {"type": "oauth", "credentialId":
//! ...}`: an [`AuthStorage`] trait and a file-backed default (mode 0600).

use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::atomic::write_private;
use super::jsonc;
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
}

/// Credentials in a JSON file (`{"credentials": {"<id>": {...}}}`), written atomically with
/// mode 0600.
#[derive(Debug)]
pub struct FileAuthStorage {
    path: PathBuf,
    lock: Mutex<()>,
}

impl FileAuthStorage {
    /// Storage in `path` (created on the first `set`).
    pub fn new(path: impl Into<PathBuf>) -> FileAuthStorage {
        FileAuthStorage {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// Storage in the user's own file, `~/.mcp-runtime/auth.json`: where OAuth logins are
    /// kept unless a host gives its own storage.
    pub fn user_default() -> FileAuthStorage {
        FileAuthStorage::new(
            crate::config::home_dir()
                .join(".mcp-runtime")
                .join("auth.json"),
        )
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Value, Error> {
        match jsonc::read(&self.path) {
            Ok(v) => Ok(v),
            Err(jsonc::ReadError::Missing) => Ok(serde_json::json!({"credentials": {}})),
            Err(jsonc::ReadError::Bad(e)) => Err(Error::Config {
                message: format!("{}: {e}", self.path.display()),
            }),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Result<(), Error> {
        let _guard = self.lock.lock();
        let mut root = self.read()?;
        let Some(obj) = root.as_object_mut() else {
            return Err(Error::Config {
                message: format!("{}: not a JSON object", self.path.display()),
            });
        };
        let creds = obj
            .entry("credentials")
            .or_insert_with(|| Value::Object(Map::new()));
        if !creds.is_object() {
            *creds = Value::Object(Map::new());
        }
        if let Some(map) = creds.as_object_mut() {
            f(map);
        }
        let text = serde_json::to_string_pretty(&root).unwrap_or_default() + "\n";
        write_private(&self.path, text.as_bytes())
    }
}

impl AuthStorage for FileAuthStorage {
    fn get(&self, id: &str) -> Option<Credential> {
        let root = self.read().ok()?;
        serde_json::from_value(root.get("credentials")?.get(id)?.clone()).ok()
    }

    fn set(&self, id: &str, credential: Credential) -> Result<(), Error> {
        let value = serde_json::to_value(credential).map_err(|e| Error::protocol(e.to_string()))?;
        self.update(|m| {
            m.insert(id.to_owned(), value);
        })
    }

    fn remove(&self, id: &str) -> Result<(), Error> {
        self.update(|m| {
            m.remove(id);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_reads_back_privately() {
        let path = std::env::temp_dir().join(format!("mcp-auth-{}/auth.json", std::process::id()));
        let store = FileAuthStorage::new(&path);
        assert!(store.get("x").is_none());
        let cred = Credential {
            access_token: "tok".into(),
            expires_at: Some(1),
            refresh_token: None,
            extra: Map::new(),
        };
        store.set("x", cred.clone()).unwrap();
        assert_eq!(store.get("x"), Some(cred.clone()));
        assert!(!format!("{cred:?}").contains("tok"));
        store.remove("x").unwrap();
        assert!(store.get("x").is_none());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
