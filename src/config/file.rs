//! Reading config files safely, and the `.mcp.json` file shape:
//! `{"mcpServers": {"<name>": {...}}}`.
//!
//! Every config source and the tool cache read their files through [`read_text`]: only a
//! regular file is read (a symlink is followed only to one), and never more than a cap. A
//! project can bring a `.mcp.json` that is a symlink to `/dev/stdin`, `/dev/zero` or
//! `/dev/urandom`, or a FIFO (git stores symlinks, and a checkout can hold anything): reading one
//! of those would hang discovery or fill memory. The file is opened without blocking (so opening
//! a FIFO cannot hang either), the opened descriptor is checked with `fstat` (no race between
//! a check and the open), and at most `cap + 1` bytes are read. Caps:
//! [`CONFIG_FILE_CAP`] (4 MiB) for config files (a hand-written config is a few KiB; a
//! generous cap costs nothing), [`CLAUDE_STATE_CAP`] (64 MiB) for `~/.claude.json`, which
//! Claude Code also uses as its state file and which grows to tens of MiB for real users, and
//! [`CACHE_FILE_CAP`] (16 MiB) for a tool-cache entry (a server with hundreds of tools with
//! large schemas). A file that fails any check is one warning, and nothing else is lost.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::expand::{expand_value, process_env};
use super::server::ServerConfig;
use crate::error::Error;

/// The size cap of a config file.
pub(crate) const CONFIG_FILE_CAP: u64 = 4 << 20;
/// The size cap of `~/.claude.json` (Claude Code's state file as well as its config).
pub(crate) const CLAUDE_STATE_CAP: u64 = 64 << 20;
/// The size cap of one tool-cache entry.
pub(crate) const CACHE_FILE_CAP: u64 = 16 << 20;

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadError {
    /// The file does not exist (not a problem: nothing is configured there).
    Missing,
    /// It exists but could not be read or parsed.
    Bad(String),
}

/// Reads a regular file of at most `cap` bytes as UTF-8 text. Anything else (a FIFO, a
/// device, a socket, a directory, a symlink to one of those, a larger file, invalid UTF-8) is
/// [`ReadError::Bad`] at once, without blocking and without reading past the cap.
pub(crate) fn read_text(path: &Path, cap: u64) -> Result<String, ReadError> {
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
        // O_NOCTTY: a terminal never becomes our controlling terminal.
        open.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match open.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Bad(e.to_string())),
    };
    // The descriptor's own metadata: what was opened, not what the path names now.
    let meta = file.metadata().map_err(|e| ReadError::Bad(e.to_string()))?;
    if !meta.is_file() {
        return Err(ReadError::Bad(format!(
            "not a regular file ({}); not read",
            kind_of(&meta)
        )));
    }
    let too_large = || ReadError::Bad(format!("larger than {} MiB; not read", cap >> 20));
    if meta.len() > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Bad(e.to_string()))?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| ReadError::Bad("not UTF-8 text".into()))
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Reads a `.mcp.json`-shaped file (a regular file of at most 4 MiB, see the module docs): its
/// servers by name, as [`parse_mcp_json`] gives them.
pub fn read_mcp_json(path: &Path) -> Result<BTreeMap<String, Result<ServerConfig, Error>>, Error> {
    let text = read_text(path, CONFIG_FILE_CAP).map_err(|e| Error::Config {
        message: match e {
            ReadError::Missing => format!("{}: no such file", path.display()),
            ReadError::Bad(e) => format!("{}: {e}", path.display()),
        },
    })?;
    parse_mcp_json(&text).map_err(|e| match e {
        Error::Config { message } => Error::Config {
            message: format!("{}: {message}", path.display()),
        },
        other => other,
    })
}

/// Parses the text of a `.mcp.json`-shaped file, expanding `${VAR}` and `${VAR:-default}` in
/// its entries as discovery does for a project's `.mcp.json`: its servers by name, each one's
/// config or why its entry does not parse (a bad entry does not hide the others).
pub fn parse_mcp_json(text: &str) -> Result<BTreeMap<String, Result<ServerConfig, Error>>, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::Config {
        message: format!("malformed JSON: {e}"),
    })?;
    let servers = match value.get("mcpServers") {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(servers)) => servers,
        Some(_) => {
            return Err(Error::Config {
                message: "\"mcpServers\" must be an object".into(),
            })
        }
    };
    let mut out = BTreeMap::new();
    for (name, entry) in servers {
        let mut entry = entry.clone();
        expand_value(&mut entry, &process_env);
        let parsed = serde_json::from_value::<ServerConfig>(entry).map_err(|e| Error::Config {
            message: format!("server \"{name}\": {e}"),
        });
        out.insert(name.clone(), parsed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_entry_does_not_hide_the_others() {
        let f = parse_mcp_json(
            r#"{"mcpServers": {"good": {"command": "a"}, "bad": {"args": "not a list"}}}"#,
        )
        .unwrap();
        assert_eq!(f.len(), 2);
        assert!(f["good"].is_ok());
        assert!(f["bad"].is_err());
    }

    #[test]
    fn malformed_files_are_typed_errors() {
        assert!(matches!(
            parse_mcp_json("{not json"),
            Err(Error::Config { .. })
        ));
        assert!(matches!(
            parse_mcp_json(r#"{"mcpServers": []}"#),
            Err(Error::Config { .. })
        ));
        assert!(parse_mcp_json("{}").unwrap().is_empty());
        let missing = read_mcp_json(Path::new("/nonexistent/.mcp.json")).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/.mcp.json"));
    }
}
