//! Getting a server: the MCP Registry's entries (`server.json`, schema 2025-12-11) found, read
//! and checked, MCP bundles (`.mcpb`, the `mcpb` feature) opened and checked, the questions one
//! way of running one asks, and the server config that runs it with the answers. Only [`Registry`] talks to the network, and nothing is written or run
//! before the host's user approved exactly what will run ([`Proposal`]).
//!
#![doc = include_str!("../../docs/install.md")]

#[cfg(feature = "mcpb")]
mod bundle;
mod consent;
mod plan;
mod registry;
mod server_json;

use std::collections::BTreeMap;

#[cfg(feature = "mcpb")]
pub use bundle::Bundle;
pub use consent::Proposal;
pub use plan::{Asked, Question};
pub use registry::{Registry, OFFICIAL_REGISTRY};
pub use server_json::SCHEMA;

use crate::config::ServerConfig;
use crate::error::Error;
use server_json::ServerDetail;

/// A server as the MCP Registry describes it: its `server.json`, read and checked against the
/// registry's schema (2025-12-11), with its status in the registry and the ways it can be run: each of its packages (npm,
/// PyPI, NuGet and OCI ones are run; a bundle is opened as a file), then each of its remote
/// endpoints.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    detail: ServerDetail,
    status: Status,
}

/// What a registry says of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Current (and what a `server.json` read on its own is).
    Active,
    /// Still given, but its publisher or the registry advises against it: warn before adding.
    /// A status this library does not know is taken as this one.
    Deprecated,
    /// Withdrawn: never added ([`ServerEntry::plan`] refuses it).
    Deleted,
}

impl Status {
    fn from_registry(status: &str) -> Status {
        match status {
            "active" => Status::Active,
            "deleted" => Status::Deleted,
            _ => Status::Deprecated,
        }
    }
}

impl ServerEntry {
    /// Reads a `server.json` document. A document that breaks the schema's rules (a name that
    /// is not `namespace/name`, a description over 100 characters, a package at `latest`, a
    /// positional argument with neither label nor value, ...) is [`Error::Config`] naming
    /// every rule broken.
    pub fn parse(text: &str) -> Result<ServerEntry, Error> {
        ServerDetail::parse(text)
            .map(|detail| ServerEntry {
                detail,
                status: Status::Active,
            })
            .map_err(|message| Error::Config {
                message: format!("server.json: {message}"),
            })
    }

    /// The registry's name of the server, `namespace/name` (`io.github.user/weather`).
    pub fn name(&self) -> &str {
        &self.detail.name
    }

    /// The version this entry describes.
    pub fn version(&self) -> &str {
        &self.detail.version
    }

    /// What the server does, in the publisher's words.
    pub fn description(&self) -> &str {
        &self.detail.description
    }

    /// Its display name, when it has one.
    pub fn title(&self) -> Option<&str> {
        self.detail.title.as_deref()
    }

    /// What the registry says of it ([`Status::Active`] for a document read on its own).
    pub fn status(&self) -> Status {
        self.status
    }

    /// The ways it can be run, one line each, in the order [`ServerEntry::questions`] and
    /// [`ServerEntry::plan`] number them: the packages (`npm @scope/server 1.0.2`), then the
    /// remotes (`streamable-http https://{host}/mcp`).
    pub fn ways(&self) -> Vec<String> {
        let packages = self.detail.packages.iter().map(|p| {
            let mut line = format!("{} {}", p.registry_type, p.identifier);
            if let Some(v) = &p.version {
                line.push(' ');
                line.push_str(v);
            }
            if p.transport.kind != "stdio" {
                line.push_str(&format!(" ({})", p.transport.kind));
            }
            line
        });
        let remotes = self
            .detail
            .remotes
            .iter()
            .map(|r| format!("{} {}", r.kind, r.url));
        packages.chain(remotes).collect()
    }

    /// Where way number `way` is an MCP bundle (`mcpb`): its URL and the SHA-256 it must have
    /// (`fileSha256`), for [`Bundle::download`](crate::install::Bundle) (the `mcpb` feature);
    /// then [`ServerEntry::questions`] and [`ServerEntry::plan`] refuse it, as a bundle is
    /// opened, not run as a command.
    pub fn bundle(&self, way: usize) -> Option<(&str, &str)> {
        let package = self.detail.packages.get(way)?;
        match (package.registry_type.as_str(), &package.file_sha256) {
            ("mcpb", Some(sha)) => Some((package.identifier.as_str(), sha.as_str())),
            _ => None,
        }
    }

    /// What running it by way number `way` asks the user, in the order met: environment
    /// variables, arguments and their variables for a package; URL variables and headers for
    /// a remote. A way that cannot be run (a bundle, a package type without a runtime here, no
    /// version to pin) is [`Error::Config`] saying why.
    pub fn questions(&self, way: usize) -> Result<Vec<Question>, Error> {
        let none = BTreeMap::new();
        let mut walk = plan::Walk::new(&none);
        // Missing answers are the plan's problems, not the questions'.
        self.walk(way, &mut walk)?
            .map_err(|message| self.error(&message))?;
        Ok(walk.questions)
    }

    /// The server config that runs it by way number `way` with `answers` (keyed by
    /// [`Question::key`]; an unanswered question takes its default). A required value with no
    /// answer, an answer outside its choices or format, a package with no version to pin, a
    /// type that cannot be run, an entry the registry deleted: [`Error::Config`], naming each.
    pub fn plan(
        &self,
        way: usize,
        answers: &BTreeMap<String, String>,
    ) -> Result<ServerConfig, Error> {
        if self.status == Status::Deleted {
            return Err(Error::Config {
                message: format!(
                    "{} {} was deleted from the registry; it is not added",
                    self.detail.name, self.detail.version
                ),
            });
        }
        let mut walk = plan::Walk::new(answers);
        self.walk(way, &mut walk)?
            .and_then(|config| walk.finish(config))
            .map_err(|message| self.error(&message))
    }

    /// [`ServerEntry::plan`] as a [`Proposal`] to show the user before anything is written or
    /// run: named after the last part of the registry's name (`io.github.user/weather` is
    /// `weather`; [`Proposal::with_name`] renames it), its first line saying where it comes
    /// from (`from: io.github.user/weather 1.2.0, npm @user/weather 1.2.0`), with a warning
    /// when the registry deprecated the entry.
    pub fn propose(
        &self,
        way: usize,
        answers: &BTreeMap<String, String>,
    ) -> Result<Proposal, Error> {
        let config = self.plan(way, answers)?;
        let ways = self.ways();
        let from = format!(
            "{} {}, {}",
            self.detail.name,
            self.detail.version,
            ways.get(way).map(String::as_str).unwrap_or_default()
        );
        let mut warnings = Vec::new();
        if self.status == Status::Deprecated {
            warnings.push(format!(
                "{} {} is deprecated in the registry",
                self.detail.name, self.detail.version
            ));
        }
        Ok(Proposal::new(local_name(&self.detail.name), config)?.from(from, warnings))
    }

    /// A config error about this entry.
    fn error(&self, message: &str) -> Error {
        Error::Config {
            message: format!("{} {}: {message}", self.detail.name, self.detail.version),
        }
    }

    /// Way number `way` walked with `walk`: its config, or why it cannot be run at all.
    fn walk(
        &self,
        way: usize,
        walk: &mut plan::Walk<'_>,
    ) -> Result<Result<ServerConfig, String>, Error> {
        Ok(match self.way(way)? {
            Way::Package(p) => plan::package_walk(p, walk),
            Way::Remote(r) => plan::remote_walk(r, walk),
        })
    }

    fn way(&self, way: usize) -> Result<Way<'_>, Error> {
        let packages = &self.detail.packages;
        let remotes = &self.detail.remotes;
        if let Some(p) = packages.get(way) {
            return Ok(Way::Package(p));
        }
        remotes
            .get(way - packages.len())
            .map(Way::Remote)
            .ok_or_else(|| Error::Config {
                message: format!(
                    "{} has {} ways to run it; there is no way {way}",
                    self.detail.name,
                    packages.len() + remotes.len()
                ),
            })
    }
}

/// The name a registry entry is added under: the last part of its registry name, each
/// character a server name cannot hold made `-`, at most 100 characters.
pub(crate) fn local_name(registry_name: &str) -> String {
    let last = registry_name.rsplit('/').next().unwrap_or(registry_name);
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

enum Way<'a> {
    Package(&'a server_json::Package),
    Remote(&'a server_json::Remote),
}

#[cfg(test)]
mod tests;
