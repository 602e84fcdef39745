//! The MCP Registry's API, `v0.1`: servers found by name a page at a time, a server's versions,
//! and one version (or the latest) of one server, each entry read and checked as a
//! [`ServerEntry`] with its status. Requests go through the library's one HTTP stack
//! (`net::fetch`: the environment's proxy and CAs, one deadline, a capped answer, no redirect).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::server_json::{is_http_url, ServerDetail};
use super::{ServerEntry, Status};
use crate::error::Error;
use crate::net::fetch::{Failure, Fetch};
use crate::net::target::TlsSettings;
use crate::net::url::form;

/// The official registry's address.
pub const OFFICIAL_REGISTRY: &str = "https://registry.modelcontextprotocol.io";

/// The most a registry's answer may hold (a page of a hundred entries is far less).
const MAX_ANSWER: usize = 8 << 20;

/// Entries a search asks for at once.
const PAGE: &str = "30";

/// Where an entry's status is, in its `_meta`.
const OFFICIAL_META: &str = "io.modelcontextprotocol.registry/official";

/// A registry of MCP servers that speaks the MCP Registry's API: the official one, or a
/// company's own. An administrator's policy may allow only some servers
/// ([`Registry::allow_only`]): the others are neither listed nor given.
///
/// ```no_run
/// use mcp_runtime::install::Registry;
///
/// let registry = Registry::official();
/// let (found, _next_page) = registry.search("weather", None)?;
/// for entry in &found {
///     println!("{} {}: {}", entry.name(), entry.version(), entry.description());
/// }
/// let latest = registry.get("io.github.example/weather", None)?;
/// # Ok::<(), mcp_runtime::Error>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    base: String,
    /// The address as messages show it (credentials and query values redacted).
    shown: String,
    allowed: Option<BTreeSet<String>>,
    timeout: Duration,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("base", &self.shown)
            .field("allowed", &self.allowed)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A list of entries, as every listing answers.
#[derive(Deserialize)]
struct Listing {
    servers: Vec<Value>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    next_cursor: Option<String>,
}

impl Registry {
    /// The official MCP Registry.
    pub fn official() -> Registry {
        Registry {
            base: OFFICIAL_REGISTRY.to_owned(),
            shown: OFFICIAL_REGISTRY.to_owned(),
            allowed: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// The registry at `base_url` (an `http://` or `https://` URL, without `/v0.1`, a query or
    /// a fragment).
    pub fn new(base_url: &str) -> Result<Registry, Error> {
        let base = base_url.trim_end_matches('/');
        let shown = crate::net::url::redact(base);
        // A URL as the schema's are, and neither a query nor a fragment.
        if !is_http_url(base) || base.contains(['?', '#']) {
            return Err(Error::Config {
                message: format!(
                    "a registry's address must be an http or https URL without a query, not {shown}"
                ),
            });
        }
        Ok(Registry {
            base: base.to_owned(),
            shown,
            ..Registry::official()
        })
    }

    /// Allows only the servers named (`io.github.user/weather`), as an administrator's policy
    /// may say: the others are left out of searches, and asking for one is an error.
    pub fn allow_only<I, S>(mut self, names: I) -> Registry
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The bound on each request (30 seconds by default).
    pub fn with_timeout(mut self, timeout: Duration) -> Registry {
        self.timeout = timeout;
        self
    }

    /// The registry's address, as messages show it (credentials and query values redacted).
    pub fn base_url(&self) -> &str {
        &self.shown
    }

    /// The servers whose name holds `query` (every server for an empty one), each at its latest
    /// version, a page at a time: the entries, and the cursor of the next page (`None` on the
    /// last). Deleted servers, servers the policy does not allow and entries that break the
    /// schema (logged) are left out.
    pub fn search(
        &self,
        query: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<ServerEntry>, Option<String>), Error> {
        let mut pairs = vec![("version", "latest"), ("limit", PAGE)];
        if !query.is_empty() {
            pairs.push(("search", query));
        }
        if let Some(cursor) = cursor {
            pairs.push(("cursor", cursor));
        }
        let url = form::with_query(&format!("{}/v0.1/servers", self.base), &pairs);
        let listing: Listing = self
            .get_json(&url)?
            .ok_or_else(|| self.error("has no search (its address may be wrong)"))?;
        let entries = self
            .readable(listing.servers)
            .filter(|e| e.status() != Status::Deleted && self.allows(e.name()))
            .collect();
        let next = listing.metadata.next_cursor.filter(|c| !c.is_empty());
        Ok((entries, next))
    }

    /// Every version of the server `name`, newest first, deleted ones included (with their
    /// status); a version that breaks today's schema is left out (and logged).
    pub fn versions(&self, name: &str) -> Result<Vec<ServerEntry>, Error> {
        self.check_allowed(name)?;
        let url = format!("{}/v0.1/servers/{}/versions", self.base, form::encode(name));
        let listing: Listing = self
            .get_json(&url)?
            .ok_or_else(|| self.error(&format!("has no server {name}")))?;
        let mut versions = Vec::new();
        for entry in self.readable(listing.servers) {
            versions.push(self.answered_for(name, None, entry)?);
        }
        Ok(versions)
    }

    /// Version `version` of the server `name`, or its latest with `None`.
    pub fn get(&self, name: &str, version: Option<&str>) -> Result<ServerEntry, Error> {
        self.check_allowed(name)?;
        let url = format!(
            "{}/v0.1/servers/{}/versions/{}",
            self.base,
            form::encode(name),
            form::encode(version.unwrap_or("latest"))
        );
        let answer: Value = self.get_json(&url)?.ok_or_else(|| {
            self.error(&match version {
                Some(v) => format!("has no version {v} of {name}"),
                None => format!("has no server {name}"),
            })
        })?;
        let entry =
            entry_of(answer).map_err(|why| self.error(&format!("gave for {name} {why}")))?;
        self.answered_for(name, version, entry)
    }

    /// The entries of a listing that can be read; the others are logged.
    fn readable(&self, answers: Vec<Value>) -> impl Iterator<Item = ServerEntry> + '_ {
        answers.into_iter().filter_map(|v| match entry_of(v) {
            Ok(e) => Some(e),
            Err(why) => {
                log::warn!(
                    "the registry at {} listed an entry left out: {why}",
                    self.shown
                );
                None
            }
        })
    }

    /// A config error naming the registry.
    fn error(&self, what: &str) -> Error {
        Error::Config {
            message: format!("the registry at {} {what}", self.shown),
        }
    }

    fn allows(&self, name: &str) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(name))
    }

    fn check_allowed(&self, name: &str) -> Result<(), Error> {
        if self.allows(name) {
            Ok(())
        } else {
            Err(Error::Config {
                message: format!("{name} is not among the servers the policy allows"),
            })
        }
    }

    /// An entry the registry gave for `name` (at `version`, when one was asked for): of that
    /// name and version.
    fn answered_for(
        &self,
        name: &str,
        version: Option<&str>,
        entry: ServerEntry,
    ) -> Result<ServerEntry, Error> {
        if entry.name() != name || version.is_some_and(|v| v != entry.version()) {
            return Err(self.error(&format!(
                "answered for {name} {} with {} {}",
                version.unwrap_or("latest"),
                crate::text::clip(entry.name(), 200),
                crate::text::clip(entry.version(), 100)
            )));
        }
        Ok(entry)
    }

    /// GETs `url` and reads its JSON; `None` when the registry has no such thing (404).
    fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<Option<T>, Error> {
        let fetch = Fetch::new(MAX_ANSWER, None, None, TlsSettings::default());
        let deadline = Instant::now() + self.timeout;
        let response = fetch
            .request(
                "GET",
                url,
                &[("Accept", "application/json")],
                None,
                deadline,
            )
            .map_err(|f| match f {
                Failure::Timeout => Error::Timeout {
                    method: format!("GET {}", crate::net::url::redact(url)),
                    after: self.timeout,
                },
                Failure::TooLarge(n) => Error::Protocol {
                    message: format!(
                        "the registry at {} answered with more than {n} bytes",
                        self.shown
                    ),
                },
                Failure::Other(why) => Error::Io {
                    message: format!("the registry at {} could not be asked: {why}", self.shown),
                    kind: None,
                },
            })?;
        match response.status {
            200 => {}
            404 => return Ok(None),
            status => {
                return Err(Error::Http {
                    status,
                    body: crate::text::clip(&String::from_utf8_lossy(&response.body), 200),
                    www_authenticate: None,
                })
            }
        }
        serde_json::from_slice(&response.body)
            .map(Some)
            .map_err(|e| Error::Protocol {
                message: format!(
                    "the registry at {} answered with something else than its API's: {}",
                    self.shown,
                    crate::text::clip(&e.to_string(), 200)
                ),
            })
    }
}

/// One entry of an answer (`{"server": {...}, "_meta": {...}}`): the document checked, with the
/// status the registry gives it.
fn entry_of(answer: Value) -> Result<ServerEntry, String> {
    #[derive(Deserialize)]
    struct Answer {
        server: Value,
        #[serde(rename = "_meta", default)]
        meta: serde_json::Map<String, Value>,
    }
    let answer: Answer = serde_json::from_value(answer).map_err(|e| {
        format!(
            "an entry without a server: {}",
            crate::text::clip(&e.to_string(), 200)
        )
    })?;
    let status = answer
        .meta
        .get(OFFICIAL_META)
        .and_then(|m| m.get("status"))
        .and_then(Value::as_str)
        .map_or(Status::Active, Status::from_registry);
    // What the registry sent is shown clipped, control characters left out.
    let name = crate::text::clip(
        answer
            .server
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("an entry"),
        200,
    );
    let detail: ServerDetail = serde_json::from_value(answer.server).map_err(|e| {
        format!(
            "{name}: not a server.json: {}",
            crate::text::clip(&e.to_string(), 200)
        )
    })?;
    let detail = detail
        .checked()
        .map_err(|why| format!("{name}: {}", crate::text::clip(&why, 1000)))?;
    Ok(ServerEntry { detail, status })
}
