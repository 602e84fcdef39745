//! What a tool's result may show a model: the [`OutputBudget`] a manager's tools apply, and
//! the directory results that do not fit are written to.
//!
//! The cutting itself is the tools layer's (`ToolOutput::model_text`); the manager holds the
//! setting and owns the temporary directory, which goes when the manager is closed
//! ([`McpManager::close`](super::McpManager::close)) or its last handle is dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::Error;

/// Claude Code's default cap on what one MCP tool result may show the model, in tokens.
pub const DEFAULT_OUTPUT_TOKENS: usize = 25_000;

/// What one tool result may show a model ([`ToolOutput::model_text`]); the whole result stays
/// in [`ToolOutput::result`].
///
/// A rendering longer than its cap is cut at a line (or else a word) boundary, never inside a
/// character, and a notice says how much was left out and how to get it. With `spill` on, a
/// result that was cut is also written whole to a file the notice names, and images, audio and
/// binary resources are written to files their placeholders name (each file mode 0600).
///
/// [`ToolOutput::model_text`]: crate::host::ToolOutput::model_text
/// [`ToolOutput::result`]: crate::host::ToolOutput::result
#[derive(Debug, Clone, PartialEq)]
pub struct OutputBudget {
    /// The cap, in estimated tokens ([`BYTES_PER_TOKEN`](crate::host::BYTES_PER_TOKEN) bytes
    /// each); `None`: no cap. Default [`DEFAULT_OUTPUT_TOKENS`] (25,000).
    pub tokens: Option<usize>,
    /// Caps of particular servers, by name, in place of `tokens` (`None`: no cap for it).
    pub servers: BTreeMap<String, Option<usize>>,
    /// Write what does not fit (and binary content) to files (default false).
    pub spill: bool,
    /// Where those files go: a directory of the host's (created, mode 0700, if missing; never
    /// removed), or with `None` a temporary one removed when the manager closes.
    pub spill_dir: Option<PathBuf>,
    /// How the notice says the rest can be had, when it was not written to a file (default:
    /// ask the tool for less).
    pub hint: String,
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget {
            tokens: Some(DEFAULT_OUTPUT_TOKENS),
            servers: BTreeMap::new(),
            spill: false,
            spill_dir: None,
            hint: "call the tool again asking for less (a narrower query, a page or a range)"
                .to_owned(),
        }
    }
}

impl OutputBudget {
    /// No cap, nothing written: the model is shown every result whole.
    pub fn unlimited() -> OutputBudget {
        OutputBudget {
            tokens: None,
            ..OutputBudget::default()
        }
    }

    /// The cap of `server`'s results, in tokens.
    pub fn cap(&self, server: &str) -> Option<usize> {
        match self.servers.get(server) {
            Some(cap) => *cap,
            None => self.tokens,
        }
    }
}

/// The manager's temporary directory for results, made on first use.
#[derive(Default)]
pub(crate) struct SpillDir {
    made: Mutex<Made>,
}

#[derive(Default)]
struct Made {
    dir: Option<PathBuf>,
    /// Closed: no temporary directory is made any more.
    closed: bool,
}

impl SpillDir {
    /// The directory to write results to: the budget's own, or the temporary one (made now
    /// if it is not there yet).
    pub(crate) fn get(&self, budget: &OutputBudget) -> Result<PathBuf, Error> {
        if let Some(dir) = &budget.spill_dir {
            make_dir(dir, true)?;
            return Ok(dir.clone());
        }
        {
            let made = self.made.lock();
            if made.closed {
                return Err(Error::Config {
                    message: "the manager is closed: no more results are written out".into(),
                });
            }
            if let Some(dir) = made.dir.clone() {
                return Ok(dir);
            }
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Made outside the lock; a second one made meanwhile by another call is removed.
        let dir = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("mcp-runtime-output-{}-{n}", std::process::id()));
            match make_dir(&dir, false) {
                Ok(()) => break dir,
                Err(_) if dir.exists() => continue,
                Err(e) => return Err(e),
            }
        };
        let mut made = self.made.lock();
        if made.closed || made.dir.is_some() {
            let first = made.dir.clone();
            let closed = made.closed;
            drop(made);
            let _ = std::fs::remove_dir(&dir);
            return match first {
                Some(first) if !closed => Ok(first),
                _ => Err(Error::Config {
                    message: "the manager is closed: no more results are written out".into(),
                }),
            };
        }
        made.dir = Some(dir.clone());
        Ok(dir)
    }

    /// Closes it: no temporary directory is made from now on, and the one there is removed
    /// with what is in it (kept for another try on drop if that fails).
    pub(crate) fn close(&self) {
        let dir = {
            let mut made = self.made.lock();
            made.closed = true;
            made.dir.clone()
        };
        if let Some(dir) = dir {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => self.made.lock().dir = None,
                Err(e) => log::warn!("could not remove {}: {e}", dir.display()),
            }
        }
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        self.close();
    }
}

/// [`crate::files::private_dir`], its error saying which directory.
fn make_dir(dir: &Path, all: bool) -> Result<(), Error> {
    crate::files::private_dir(dir, all)
        .map_err(|e| Error::io(format_args!("creating {}", dir.display()), e))
}
