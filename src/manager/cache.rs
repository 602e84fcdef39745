//! The tool-definition cache behind the fast start: the tools each server listed last time,
//! so a server still connecting after the startup gate can be offered as deferred tools.
//!
//! An entry is keyed by server name and holds `{ version, config_hash, tools, written_at }`.
//! The hash is a SHA-256 over the canonical (sorted keys) *unresolved* config, so a config
//! change invalidates the entry and a rotated secret resolved at connect time does not. An
//! entry that is corrupt, of another version, for another config, or older than the TTL is a
//! miss. Writes are atomic (temporary file + rename), mode 0600.
//!
//! Beside the tools an entry keeps what their listing said of itself ([`Listing`]): the
//! protocol version the server spoke, so the era probe is paid once per config, and for the
//! stateless era (2026-07-28) its `ttlMs` and `cacheScope`. A stateless entry is fresh only
//! within its `ttlMs` (absent means stale at once); the 30-day TTL applies to the handshake
//! eras. A `private` listing may be reused only within one authorization context, which a
//! file shared by every run cannot tell apart: its tools are never written (its era is).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::protocol::{Listing, Prompt, Resource, ResourceTemplate, Tool};

/// The cache format version; entries of another version are misses.
pub const CACHE_VERSION: u32 = 1;

/// How long an entry stays valid by default.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Where tool definitions are remembered between runs. A manager runs a method that panics
/// inside a catch: a read is then a miss, a write an error (logged).
pub trait ToolCache: Send + Sync {
    /// The tools stored for `server` under `config_hash`, if fresh.
    fn get(&self, server: &str, config_hash: &str) -> Option<Vec<Arc<Tool>>>;
    /// Stores the tools of `server` under `config_hash`.
    fn set(&self, server: &str, config_hash: &str, tools: &[Arc<Tool>]) -> Result<(), Error>;
    /// The resources, templates and prompts stored for `server` under `config_hash`, if fresh,
    /// as [`set_features`](ToolCache::set_features) was given them. (A cache that keeps only
    /// tools answers `None`; a value the manager cannot read back is a miss.)
    fn get_features(&self, server: &str, config_hash: &str) -> Option<Value> {
        let _ = (server, config_hash);
        None
    }
    /// Stores the resources, templates and prompts of `server` under `config_hash`: a JSON
    /// value of the manager's own, to keep as it is.
    fn set_features(&self, server: &str, config_hash: &str, features: &Value) -> Result<(), Error> {
        let _ = (server, config_hash, features);
        Ok(())
    }
    /// Stores the tools with what their listing said of itself. The default ignores `listing`.
    fn set_listing(
        &self,
        server: &str,
        config_hash: &str,
        tools: &[Arc<Tool>],
        listing: &Listing,
    ) -> Result<(), Error> {
        let _ = listing;
        self.set(server, config_hash, tools)
    }
    /// The protocol version `server` spoke when its tools were last stored under
    /// `config_hash`, fresh or not (it spares the next connect the era probe).
    fn era(&self, server: &str, config_hash: &str) -> Option<String> {
        let _ = (server, config_hash);
        None
    }
}

/// What a server offers beside tools, as the manager hands it to the cache (as JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CachedFeatures {
    /// Its resources.
    #[serde(default)]
    pub resources: Vec<Arc<Resource>>,
    /// Its resource templates.
    #[serde(default)]
    pub templates: Vec<Arc<ResourceTemplate>>,
    /// Its prompts.
    #[serde(default)]
    pub prompts: Vec<Arc<Prompt>>,
}

/// A features entry: `{ version, configHash, features, writtenAt }`, in a file of its own
/// beside the server's tools.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FeaturesEntry {
    version: u32,
    config_hash: String,
    features: Value,
    written_at: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    version: u32,
    config_hash: String,
    tools: Vec<Arc<Tool>>,
    /// Milliseconds since the Unix epoch.
    written_at: u64,
    #[serde(default, flatten)]
    listing: Listing,
}

/// What [`ToolCache::era`] reads of an [`Entry`]: every other member is skipped unread (no
/// `flatten`, which would buffer them all).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EraOnly {
    version: u32,
    config_hash: String,
    #[serde(default)]
    protocol_version: Option<String>,
}

/// One JSON file per server in a directory.
#[derive(Debug, Clone)]
pub struct FileToolCache {
    dir: PathBuf,
    ttl: Duration,
}

impl FileToolCache {
    /// A cache in `dir` with the default 30-day TTL.
    pub fn new(dir: impl Into<PathBuf>) -> FileToolCache {
        FileToolCache {
            dir: dir.into(),
            ttl: DEFAULT_TTL,
        }
    }

    /// Sets the TTL.
    pub fn with_ttl(mut self, ttl: Duration) -> FileToolCache {
        self.ttl = ttl;
        self
    }

    /// The default directory: `$XDG_CACHE_HOME/mcp-runtime`, else `~/.cache/mcp-runtime`
    /// (`~/Library/Caches/mcp-runtime` on macOS).
    pub fn default_dir() -> PathBuf {
        if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(x).join("mcp-runtime");
        }
        let home = crate::files::home_dir();
        if cfg!(target_os = "macos") {
            home.join("Library/Caches/mcp-runtime")
        } else {
            home.join(".cache/mcp-runtime")
        }
    }

    /// The cache in [`FileToolCache::default_dir`], the user's cache directory: what the
    /// loader, the session and the CLI use unless told otherwise.
    pub fn user_default() -> FileToolCache {
        FileToolCache::new(FileToolCache::default_dir())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of one server: its sanitized name plus a hash of the raw name, so distinct
    /// names never share a file.
    pub fn path_for(&self, server: &str) -> PathBuf {
        let digest = Sha256::digest(server.as_bytes());
        let short = crate::hex::hex(&digest[..4]);
        let safe: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        self.dir.join(format!("{safe}-{short}.json"))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl ToolCache for FileToolCache {
    fn get(&self, server: &str, config_hash: &str) -> Option<Vec<Arc<Tool>>> {
        let entry: Entry = read_entry(&self.path_for(server), |e: &Entry| e.version)?;
        let age = Duration::from_millis(now_ms().saturating_sub(entry.written_at));
        let fresh = if entry.listing.is_stateless() {
            age < Duration::from_millis(entry.listing.ttl_ms.unwrap_or(0)).min(self.ttl)
        } else {
            age <= self.ttl
        };
        if entry.config_hash != config_hash || !fresh || entry.listing.is_private() {
            return None;
        }
        Some(entry.tools)
    }

    fn set(&self, server: &str, config_hash: &str, tools: &[Arc<Tool>]) -> Result<(), Error> {
        self.set_listing(server, config_hash, tools, &Listing::default())
    }

    fn set_listing(
        &self,
        server: &str,
        config_hash: &str,
        tools: &[Arc<Tool>],
        listing: &Listing,
    ) -> Result<(), Error> {
        let entry = Entry {
            version: CACHE_VERSION,
            config_hash: config_hash.to_owned(),
            tools: if listing.is_private() {
                Vec::new()
            } else {
                tools.to_vec()
            },
            written_at: now_ms(),
            listing: listing.clone(),
        };
        write_entry(&self.path_for(server), &entry)
    }

    fn get_features(&self, server: &str, config_hash: &str) -> Option<Value> {
        let entry: FeaturesEntry =
            read_entry(&self.features_path_for(server), |e: &FeaturesEntry| {
                e.version
            })?;
        let age = Duration::from_millis(now_ms().saturating_sub(entry.written_at));
        (entry.config_hash == config_hash && age <= self.ttl).then_some(entry.features)
    }

    fn set_features(&self, server: &str, config_hash: &str, features: &Value) -> Result<(), Error> {
        let entry = FeaturesEntry {
            version: CACHE_VERSION,
            config_hash: config_hash.to_owned(),
            features: features.clone(),
            written_at: now_ms(),
        };
        write_entry(&self.features_path_for(server), &entry)
    }

    fn era(&self, server: &str, config_hash: &str) -> Option<String> {
        // Only the header: the tools are skipped unread, not parsed and dropped.
        let entry: EraOnly = read_entry(&self.path_for(server), |e: &EraOnly| e.version)?;
        if entry.config_hash != config_hash {
            return None;
        }
        entry.protocol_version
    }
}

impl FileToolCache {
    /// The features file of one server, beside its tools file.
    pub fn features_path_for(&self, server: &str) -> PathBuf {
        self.path_for(server).with_extension("features.json")
    }
}

/// The entry in `path`, if it is a regular file of at most 16 MiB (a FIFO or a device there is
/// a miss, at once), parses, and is of this format version; anything else is a miss (logged at
/// debug).
fn read_entry<T: serde::de::DeserializeOwned>(
    path: &Path,
    version: impl Fn(&T) -> u32,
) -> Option<T> {
    let text = match crate::config::read_text(path, crate::config::CACHE_FILE_CAP) {
        Ok(t) => t,
        Err(crate::config::ReadError::Missing) => return None,
        Err(crate::config::ReadError::Bad(e)) => {
            log::debug!("tool cache {}: {e}; ignoring it", path.display());
            return None;
        }
    };
    let entry: T = match serde_json::from_str(&text) {
        Ok(e) => e,
        Err(e) => {
            log::debug!(
                "tool cache {}: unreadable entry ({e}); ignoring it",
                path.display()
            );
            return None;
        }
    };
    (version(&entry) == CACHE_VERSION).then_some(entry)
}

/// Writes an entry atomically, mode 0600.
fn write_entry<T: Serialize>(path: &Path, entry: &T) -> Result<(), Error> {
    let text = serde_json::to_string(entry).map_err(|e| Error::protocol(e.to_string()))?;
    crate::files::write_private(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{config_hash, ServerConfig};
    use serde_json::json;

    fn tools() -> Vec<Arc<Tool>> {
        vec![Arc::new(Tool::new(
            "read",
            "Reads",
            json!({"type": "object"}),
        ))]
    }

    fn cache(name: &str) -> FileToolCache {
        let dir = std::env::temp_dir().join(format!("mcp-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        FileToolCache::new(dir)
    }

    #[test]
    fn features_are_kept_beside_the_tools() {
        let c = cache("features");
        let hash = config_hash(&ServerConfig::stdio("srv", ["a"]));
        assert!(c.get_features("files", &hash).is_none());
        let features = CachedFeatures {
            prompts: vec![Arc::new(
                serde_json::from_value(json!({"name": "greet"})).unwrap(),
            )],
            ..CachedFeatures::default()
        };
        let features = serde_json::to_value(features).unwrap();
        c.set_features("files", &hash, &features).unwrap();
        assert_eq!(c.get_features("files", &hash), Some(features));
        assert!(c.get_features("files", "another").is_none());
        c.set("files", &hash, &tools()).unwrap();
        assert_eq!(c.get("files", &hash), Some(tools()), "two files, no clash");
        assert_ne!(c.path_for("files"), c.features_path_for("files"));
    }

    #[test]
    fn hit_miss_config_change_and_ttl() {
        let c = cache("basic");
        let config = ServerConfig::stdio("srv", ["a"]);
        let hash = config_hash(&config);
        assert!(c.get("files", &hash).is_none(), "miss when empty");
        c.set("files", &hash, &tools()).unwrap();
        assert_eq!(c.get("files", &hash), Some(tools()));
        let changed = config_hash(&ServerConfig::stdio("srv", ["b"]));
        assert_ne!(changed, hash);
        assert!(
            c.get("files", &changed).is_none(),
            "another config is a miss"
        );
        assert!(c.get("other", &hash).is_none());
        let stale = c.clone().with_ttl(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert!(stale.get("files", &hash).is_none(), "stale is a miss");
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[test]
    fn a_stateless_listing_is_fresh_within_its_ttl_and_a_private_one_is_never_shared() {
        let c = cache("ttl");
        let hash = config_hash(&ServerConfig::stdio("srv", ["a"]));
        let stateless = |ttl_ms: Option<u64>, scope: &str| Listing {
            protocol_version: Some("2026-07-28".into()),
            ttl_ms,
            cache_scope: Some(scope.into()),
        };
        c.set_listing("s", &hash, &tools(), &stateless(Some(60_000), "public"))
            .unwrap();
        assert_eq!(c.get("s", &hash), Some(tools()));
        assert_eq!(c.era("s", &hash).as_deref(), Some("2026-07-28"));
        c.set_listing("s", &hash, &tools(), &stateless(Some(0), "public"))
            .unwrap();
        assert!(c.get("s", &hash).is_none(), "ttlMs 0 is stale at once");
        c.set_listing("s", &hash, &tools(), &stateless(None, "public"))
            .unwrap();
        assert!(c.get("s", &hash).is_none(), "no ttlMs is 0");
        c.set_listing("s", &hash, &tools(), &stateless(Some(60_000), "private"))
            .unwrap();
        assert!(c.get("s", &hash).is_none(), "private tools are not shared");
        let text = std::fs::read_to_string(c.path_for("s")).unwrap();
        assert!(!text.contains("\"read\""), "nor written: {text}");
        assert_eq!(c.era("s", &hash).as_deref(), Some("2026-07-28"));
        let handshake = Listing {
            protocol_version: Some("2025-11-25".into()),
            ..Listing::default()
        };
        c.set_listing("s", &hash, &tools(), &handshake).unwrap();
        assert_eq!(
            c.get("s", &hash),
            Some(tools()),
            "30 days for the handshake eras"
        );
        assert!(c.era("s", "other").is_none());
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[test]
    fn corrupt_and_old_entries_are_misses() {
        let c = cache("corrupt");
        let hash = config_hash(&ServerConfig::default());
        c.set("s", &hash, &tools()).unwrap();
        std::fs::write(c.path_for("s"), "{ not json").unwrap();
        assert!(c.get("s", &hash).is_none());
        std::fs::write(
            c.path_for("s"),
            json!({"version": 0, "configHash": hash, "tools": [], "writtenAt": now_ms()})
                .to_string(),
        )
        .unwrap();
        assert!(c.get("s", &hash).is_none());
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn an_entry_that_is_not_a_regular_file_is_a_miss_at_once() {
        let c = cache("hostile");
        let hash = config_hash(&ServerConfig::default());
        c.set("s", &hash, &tools()).unwrap();
        let path = c.path_for("s");
        let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        let hostile: [&dyn Fn(); 4] = [
            &|| std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
            &|| std::os::unix::fs::symlink("/dev/urandom", &path).unwrap(),
            // SAFETY: a valid NUL-terminated path and a mode.
            &|| assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0),
            &|| {
                let f = std::fs::File::create(&path).unwrap();
                f.set_len(crate::config::CACHE_FILE_CAP + 1).unwrap();
            },
        ];
        for (i, make) in hostile.iter().enumerate() {
            std::fs::remove_file(&path).unwrap();
            make();
            // On its own thread, bounded: a hang fails the test instead of hanging it.
            let (tx, rx) = std::sync::mpsc::channel();
            let (reader, hash) = (c.clone(), hash.clone());
            std::thread::spawn(move || {
                let _ = tx.send(reader.get("s", &hash));
            });
            let got = rx
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("case {i}: the cache read did not return"));
            assert!(got.is_none(), "case {i}");
        }
        // And the next write replaces the bad entry with a good one.
        std::fs::remove_file(&path).unwrap();
        c.set("s", &hash, &tools()).unwrap();
        assert_eq!(c.get("s", &hash), Some(tools()));
        std::fs::remove_dir_all(c.dir()).unwrap();
    }

    #[test]
    fn the_hash_is_canonical_and_names_do_not_share_files() {
        let a: ServerConfig =
            serde_json::from_value(json!({"command": "x", "env": {"A": "1", "B": "2"}})).unwrap();
        let b: ServerConfig =
            serde_json::from_value(json!({"env": {"B": "2", "A": "1"}, "command": "x"})).unwrap();
        assert_eq!(config_hash(&a), config_hash(&b));
        let c = cache("names");
        assert_ne!(c.path_for("a b"), c.path_for("a_b"));
    }
}
