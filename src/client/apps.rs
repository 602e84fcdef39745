//! MCP Apps' `ui://` resources: read, checked and kept per connection.
//!
//! [`Client::read_app`] reads the resource a tool's `_meta.ui.resourceUri` names, and hands it
//! over only when it is what an App's page must be: a `ui://` URI, contents of MIME type
//! `text/html;profile=mcp-app` (parameters in any order, any case), HTML text (or a base64
//! blob of it) of at most [`MAX_APP_BYTES`]. The page is kept for the connection's life
//! (servers serve the same page for every call; a new connection reads it again, and the host
//! drops it with [`Client::forget_app`] when the server says it changed), at most
//! [`KEPT_PAGES`] pages, and its `_meta.ui` typed.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use parking_lot::Mutex;

use super::Client;
use crate::error::Error;
use crate::protocol::{ResourceUi, APP_MIME_TYPE};

/// The largest App page handed over.
pub const MAX_APP_BYTES: usize = 8 << 20;

/// How many pages a connection keeps (one more drops one of them).
const KEPT_PAGES: usize = 16;

/// An App's page as read from its server.
#[derive(Debug, Clone, PartialEq)]
pub struct AppPage {
    /// Its `ui://` URI.
    pub uri: String,
    /// The HTML.
    pub html: String,
    /// What it says of itself (its CSP, permissions, domain, border), from the contents'
    /// `_meta.ui`.
    pub ui: Option<ResourceUi>,
}

/// The pages read so far on one connection.
#[derive(Default)]
pub(super) struct AppCache(Mutex<HashMap<String, Arc<AppPage>>>);

impl Client {
    /// The App page at `uri` (a `ui://` resource), read once per connection and checked (see
    /// the module docs); a page that fails a check is an [`Error::Integrity`].
    pub fn read_app(&self, uri: &str) -> Result<Arc<AppPage>, Error> {
        if let Some(page) = self.inner.apps.0.lock().get(uri) {
            return Ok(Arc::clone(page));
        }
        let refuse = |problem: String| Error::Integrity {
            uri: uri.to_owned(),
            problem,
        };
        if !uri.starts_with("ui://") {
            return Err(refuse("an App's page is a ui:// resource".into()));
        }
        let read = self.read_resource(uri)?;
        let contents = read
            .contents
            .iter()
            .find(|c| c.uri == uri)
            .ok_or_else(|| refuse("the server sent no contents for it".into()))?;
        let mime = contents.mime_type.as_deref().unwrap_or("");
        if !is_app_mime(mime) {
            return Err(refuse(format!(
                "its MIME type is {mime:?}, not {APP_MIME_TYPE:?}"
            )));
        }
        let html = match (&contents.text, &contents.blob) {
            (Some(text), _) => text.clone(),
            (None, Some(blob)) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob.trim())
                    .map_err(|e| refuse(format!("its blob is not base64: {e}")))?;
                String::from_utf8(bytes).map_err(|_| refuse("its blob is not UTF-8".into()))?
            }
            (None, None) => return Err(refuse("neither text nor blob".into())),
        };
        if html.len() > MAX_APP_BYTES {
            return Err(refuse(format!(
                "{} bytes, more than the {MAX_APP_BYTES} an App's page may have",
                html.len()
            )));
        }
        let page = Arc::new(AppPage {
            uri: uri.to_owned(),
            html,
            ui: ResourceUi::from_meta(contents.extra.get("_meta")),
        });
        let mut kept = self.inner.apps.0.lock();
        if kept.len() >= KEPT_PAGES {
            if let Some(any) = kept.keys().next().cloned() {
                kept.remove(&any);
            }
        }
        kept.insert(uri.to_owned(), Arc::clone(&page));
        Ok(page)
    }

    /// Forgets the App page at `uri` (it changed): the next [`Client::read_app`] reads it
    /// again.
    pub fn forget_app(&self, uri: &str) {
        self.inner.apps.0.lock().remove(uri);
    }
}

/// Whether `mime` is an App page's: `text/html` with `profile=mcp-app`, parameters in any
/// order, names and the type in any case.
fn is_app_mime(mime: &str) -> bool {
    let mut parts = mime.split(';').map(str::trim);
    let kind = parts.next().unwrap_or("");
    kind.eq_ignore_ascii_case("text/html")
        && parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("profile") && v.trim().trim_matches('"') == "mcp-app"
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_mime_types() {
        assert!(is_app_mime("text/html;profile=mcp-app"));
        assert!(is_app_mime("TEXT/HTML; charset=utf-8; Profile=\"mcp-app\""));
        assert!(!is_app_mime("text/html"));
        assert!(!is_app_mime("text/plain;profile=mcp-app"));
        assert!(!is_app_mime(""));
    }
}
