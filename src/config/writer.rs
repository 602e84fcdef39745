//! The config writer: edits the host's own files (never anybody else's). Adds, removes, enables
//! and disables servers; a server that lives in a file we do not own is toggled through the
//! user file's `disabledServers` / `enabledServers` lists. Every edit reads the file, keeps what
//! it does not touch (unknown fields included), and writes it back atomically (mode 0600, in a
//! 0700 directory). A malformed file is refused, never overwritten.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::discovery::DiscoveryOptions;
use super::jsonc::{self, ReadError};
use super::server::{validate_server_name, ServerConfig};
use super::source::{Level, SourceMeta};
use crate::error::Error;
use crate::files::write_private;

/// Edits the host's own MCP config files.
#[derive(Debug, Clone)]
pub struct ConfigWriter {
    project_file: PathBuf,
    user_file: PathBuf,
}

impl ConfigWriter {
    /// The writer for the project at `cwd`, with the host's file locations from `options`.
    pub fn new(cwd: &Path, options: &DiscoveryOptions) -> ConfigWriter {
        let ctx = options.context(cwd);
        ConfigWriter {
            project_file: options.host.project_file(&ctx),
            user_file: options.host.user_file(&ctx),
        }
    }

    /// The host's file of a level: `<cwd>/<dir>/mcp.json` for the project, `<user
    /// dir>/mcp.json` for the user.
    pub fn path(&self, level: Level) -> &Path {
        match level {
            Level::Project => &self.project_file,
            Level::User => &self.user_file,
        }
    }

    /// Whether `path` is one of our files.
    pub fn owns(&self, path: &Path) -> bool {
        path == self.project_file || path == self.user_file
    }

    /// Adds a server; fails if the name is invalid or already in that file.
    pub fn add(&self, level: Level, name: &str, config: &ServerConfig) -> Result<(), Error> {
        validate_server_name(name)?;
        let value = serde_json::to_value(config).map_err(|e| Error::Config {
            message: format!("the config of {name} cannot be written as JSON: {e}"),
        })?;
        self.edit(self.path(level), |root| {
            let servers = servers_mut(root);
            if servers.contains_key(name) {
                return Err(Error::Config {
                    message: format!(
                        "a server named {name:?} already exists in {}",
                        self.path(level).display()
                    ),
                });
            }
            servers.insert(name.to_owned(), value);
            Ok(())
        })
    }

    /// Removes a server from a file; `Ok(false)` when it was not there.
    pub fn remove(&self, level: Level, name: &str) -> Result<bool, Error> {
        let path = self.path(level);
        if !path.exists() {
            return Ok(false);
        }
        let mut removed = false;
        self.edit(path, |root| {
            removed = servers_mut(root).remove(name).is_some();
            Ok(())
        })?;
        Ok(removed)
    }

    /// Turns a server on or off. `source` is where discovery found it: in one of our files, its
    /// `enabled` field is edited there; otherwise (or when unknown) the user file's
    /// `disabledServers` / `enabledServers` lists are.
    pub fn set_enabled(
        &self,
        name: &str,
        enabled: bool,
        source: Option<&SourceMeta>,
    ) -> Result<(), Error> {
        let owned = source.map(|s| s.path.as_path()).filter(|p| self.owns(p));
        if let Some(path) = owned {
            self.edit(path, |root| {
                if let Some(Value::Object(entry)) = servers_mut(root).get_mut(name) {
                    if enabled {
                        entry.remove("enabled");
                        entry.remove("disabled");
                    } else {
                        entry.insert("enabled".into(), Value::Bool(false));
                    }
                }
                Ok(())
            })?;
        }
        // The lists live in the user file; keep them consistent with the request.
        let needs_force = enabled && owned.is_none();
        let user = self.user_file.clone();
        let listed = |root: &Value, key: &str| {
            root.get(key)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(name)))
        };
        let current = match jsonc::read(&user) {
            Ok(v) => v,
            Err(ReadError::Missing) => json!({}),
            Err(ReadError::Bad(e)) => {
                return Err(Error::Config {
                    message: format!("{}: {e}; not overwritten", user.display()),
                })
            }
        };
        let want_disabled = !enabled && owned.is_none();
        if listed(&current, "disabledServers") == want_disabled
            && listed(&current, "enabledServers") == needs_force
        {
            return Ok(());
        }
        self.edit(&user, |root| {
            set_listed(root, "disabledServers", name, want_disabled);
            set_listed(root, "enabledServers", name, needs_force);
            Ok(())
        })
    }

    /// Reads `path` (missing: an empty config), applies `f`, writes it back atomically. Edits
    /// of one file from this process are serialized, so concurrent edits never lose one
    /// another (the lock guards only this file's read-modify-write).
    fn edit(
        &self,
        path: &Path,
        f: impl FnOnce(&mut Value) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let lock = file_lock(path);
        let _serialized = lock.lock();
        let mut root = match jsonc::read(path) {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                return Err(Error::Config {
                    message: format!("{}: not a JSON object; not overwritten", path.display()),
                })
            }
            Err(ReadError::Missing) => json!({ "mcpServers": {} }),
            Err(ReadError::Bad(e)) => {
                return Err(Error::Config {
                    message: format!("{}: {e}; not overwritten", path.display()),
                })
            }
        };
        f(&mut root)?;
        let text = serde_json::to_string_pretty(&root).unwrap_or_default() + "\n";
        write_private(path, text.as_bytes())
    }
}

/// The in-process lock of one config file.
fn file_lock(path: &Path) -> std::sync::Arc<parking_lot::Mutex<()>> {
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock};
    type Locks = parking_lot::Mutex<HashMap<PathBuf, Arc<parking_lot::Mutex<()>>>>;
    static LOCKS: OnceLock<Locks> = OnceLock::new();
    let mut locks = LOCKS.get_or_init(Default::default).lock();
    Arc::clone(locks.entry(path.to_path_buf()).or_default())
}

/// `value` as an object, made one (empty) when it is anything else.
fn object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    }
}

fn servers_mut(root: &mut Value) -> &mut Map<String, Value> {
    object_mut(object_mut(root).entry("mcpServers").or_insert(Value::Null))
}

fn set_listed(root: &mut Value, key: &str, name: &str, present: bool) {
    let obj = object_mut(root);
    let list = obj.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Value::Array(items) = list else {
        unreachable!("made an array above")
    };
    items.retain(|v| v.as_str() != Some(name));
    if present {
        items.push(Value::String(name.to_owned()));
    }
    if items.is_empty() {
        obj.remove(key);
    }
}
