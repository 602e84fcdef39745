//! The MCP Registry's API, `v0.1`: servers found by name a page at a time, a server's versions,
//! and one version (or the latest) of one server, each entry read and checked as a
//! [`ServerEntry`] with its status. Requests go through the library's one HTTP stack
//! (`net::fetch`: the environment's proxy and CAs, one deadline, a capped answer, no redirect).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::server_json::ServerDetail;
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
#[derive(Debug, Clone)]
pub struct Registry {
    base: String,
    allowed: Option<BTreeSet<String>>,
    timeout: Duration,
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
            allowed: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// The registry at `base_url` (an `http://` or `https://` URL, without `/v0.1`).
    pub fn new(base_url: &str) -> Result<Registry, Error> {
        let base = base_url.trim_end_matches('/');
        let rest = base
            .strip_prefix("https://")
            .or_else(|| base.strip_prefix("http://"));
        if rest.is_none_or(|r| r.is_empty() || r.contains(char::is_whitespace)) {
            return Err(Error::Config {
                message: format!(
                    "a registry's address must be an http or https URL, not {}",
                    crate::net::url::redact(base_url)
                ),
            });
        }
        Ok(Registry {
            base: base.to_owned(),
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

    /// The registry's address.
    pub fn base_url(&self) -> &str {
        &self.base
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
        let listing: Listing = self.get_json(&url, "the search")?;
        let entries = listing
            .servers
            .into_iter()
            .filter_map(|v| match entry_of(v) {
                Ok(e) => Some(e),
                Err(why) => {
                    log::warn!(
                        "the registry at {} listed an entry left out: {why}",
                        self.base
                    );
                    None
                }
            })
            .filter(|e| e.status() != Status::Deleted && self.allows(e.name()))
            .collect();
        let next = listing.metadata.next_cursor.filter(|c| !c.is_empty());
        Ok((entries, next))
    }

    /// Every version of the server `name`, newest first, deleted ones included (with their
    /// status).
    pub fn versions(&self, name: &str) -> Result<Vec<ServerEntry>, Error> {
        self.check_allowed(name)?;
        let url = format!("{}/v0.1/servers/{}/versions", self.base, form::encode(name));
        let listing: Listing = self.get_json(&url, name)?;
        listing
            .servers
            .into_iter()
            .map(|v| self.answered_for(name, entry_of(v)))
            .collect()
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
        let answer: Value = self.get_json(&url, name)?;
        self.answered_for(name, entry_of(answer))
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

    /// An entry the registry gave for `name`: checked, and of that name.
    fn answered_for(
        &self,
        name: &str,
        entry: Result<ServerEntry, String>,
    ) -> Result<ServerEntry, Error> {
        let entry = entry.map_err(|why| Error::Config {
            message: format!("the registry at {} gave for {name} {why}", self.base),
        })?;
        if entry.name() != name {
            return Err(Error::Config {
                message: format!(
                    "the registry at {} answered for {name} with {}",
                    self.base,
                    entry.name()
                ),
            });
        }
        Ok(entry)
    }

    /// GETs `url` and reads its JSON; `what` names it in errors (a server's name, or "the
    /// search").
    fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str, what: &str) -> Result<T, Error> {
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
                        self.base
                    ),
                },
                Failure::Other(why) => Error::Io {
                    message: format!("the registry at {} could not be asked: {why}", self.base),
                    kind: None,
                },
            })?;
        match response.status {
            200 => {}
            404 => {
                return Err(Error::Config {
                    message: format!("the registry at {} has no {what}", self.base),
                })
            }
            status => {
                return Err(Error::Http {
                    status,
                    body: crate::text::clip(&String::from_utf8_lossy(&response.body), 200),
                    www_authenticate: None,
                })
            }
        }
        serde_json::from_slice(&response.body).map_err(|e| Error::Protocol {
            message: format!(
                "the registry at {} answered with no listing: {e}",
                self.base
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
    let answer: Answer =
        serde_json::from_value(answer).map_err(|e| format!("an entry without a server: {e}"))?;
    let status = answer
        .meta
        .get(OFFICIAL_META)
        .and_then(|m| m.get("status"))
        .and_then(Value::as_str)
        .map_or(Status::Active, Status::from_registry);
    let name = answer
        .server
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("an entry")
        .to_owned();
    let detail: ServerDetail = serde_json::from_value(answer.server)
        .map_err(|e| format!("{name}: not a server.json: {e}"))?;
    let detail = detail.checked().map_err(|why| format!("{name}: {why}"))?;
    Ok(ServerEntry { detail, status })
}
