//! What servers offer beside tools, kept per server like tools: resources, resource templates
//! and prompts (listed once a server is connected, refreshed on their `list_changed`
//! notifications, coalesced, and kept in the tool cache, so a server still connecting after
//! the startup gate offers what it listed last time), each server's identity and instructions, and the calls that use
//! them (read, subscribe, get a prompt, complete, set the log level).
//!
//! Prompts are offered to hosts as commands named like tools, `mcp_<server>_<prompt>` (the
//! same sanitising, 64-character cap and collision rules, see [`naming`](super::naming)), so one
//! naming scheme covers everything a model or a user can invoke.

use std::sync::Arc;

use serde_json::Value;

use super::naming::exposed_names;
use super::state::Phase;
use super::{McpManager, Shared};
use crate::client::Client;
use crate::config::config_hash;
use crate::error::Error;
use crate::manager::cache::CachedFeatures;
use crate::protocol::{
    Completion, CompletionRef, ContentBlock, GetPromptResult, LoggingLevel, Prompt,
    ReadResourceResult, Resource, ResourceTemplate,
};

/// One server's resources, templates and prompts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Features {
    pub resources: Vec<Arc<Resource>>,
    pub templates: Vec<Arc<ResourceTemplate>>,
    pub prompts: Vec<Arc<Prompt>>,
}

/// Every server's resources, templates and prompts.
type Listed = (
    Vec<Managed<Resource>>,
    Vec<Managed<ResourceTemplate>>,
    Vec<Managed<Prompt>>,
);

/// A resource, resource template or prompt, and the server that listed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Managed<T> {
    /// The server's configured name.
    pub server: String,
    /// The item as listed, shared with the manager rather than copied.
    pub item: Arc<T>,
    /// `mcp_<server>_<name>`: the name a host offers it under (a prompt's command), unique
    /// among every server's items of its kind.
    pub name: String,
}

impl Features {
    /// As the cache keeps them (JSON).
    pub(crate) fn to_cached(&self) -> serde_json::Value {
        let cached = CachedFeatures {
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            prompts: self.prompts.clone(),
        };
        serde_json::to_value(cached).unwrap_or_default()
    }

    /// From the cache; `None` for a value that is not what [`Features::to_cached`] gave.
    pub(crate) fn from_cached(cached: serde_json::Value) -> Option<Features> {
        let cached: CachedFeatures = serde_json::from_value(cached).ok()?;
        Some(Features {
            resources: cached.resources,
            templates: cached.templates,
            prompts: cached.prompts,
        })
    }

    /// Lists what `client`'s server declared; a list that fails is logged and left empty (the
    /// connection and its tools do not depend on it).
    pub(crate) fn list(client: &Client) -> Features {
        Features {
            resources: listed(client, "resources", client.list_resources()),
            templates: listed(
                client,
                "resource templates",
                client.list_resource_templates(),
            ),
            prompts: listed(client, "prompts", client.list_prompts()),
        }
    }

    /// Whether the server declares anything to list.
    pub(crate) fn offered_by(client: &Client) -> bool {
        let caps = client.server_capabilities();
        caps.resources.is_some() || caps.prompts.is_some()
    }
}

impl Shared {
    /// Lists a connected server's features and stores them if `attempt` still owns it; tells
    /// the listeners when they changed.
    pub(crate) fn refresh_features(&self, name: &str) -> Result<(), Error> {
        let (client, attempt) = self.connected(name)?;
        let features = Features::list(&client);
        if let (Some(cache), Some(config)) = (&self.options.cache, self.config_of(name)) {
            if let Err(e) = cache.set_features(name, &config_hash(&config), &features.to_cached()) {
                log::debug!("[{name}] could not write the features to the cache: {e}");
            }
        }
        let changed = {
            let mut state = self.state.lock();
            match state.servers.get_mut(name) {
                Some(server) if server.attempt() == Some(attempt) => {
                    let changed = server.features != features;
                    server.features = features;
                    changed
                }
                _ => false,
            }
        };
        if changed {
            self.features_changed(vec![name.to_owned()]);
        }
        Ok(())
    }

    /// The client and attempt of a connected server.
    pub(crate) fn connected(&self, name: &str) -> Result<(Client, u64), Error> {
        let state = self.state.lock();
        let server = state
            .servers
            .get(name)
            .ok_or_else(|| Error::not_connected(name))?;
        match &server.phase {
            Phase::Connected { attempt, client } => Ok((client.clone(), *attempt)),
            _ => Err(server.not_connected(name)),
        }
    }

    pub(crate) fn features_changed(&self, servers: Vec<String>) {
        let listeners = self.features_listeners.lock().clone();
        super::caught::tell("an on_features_changed listener", &listeners, &servers);
    }
}

impl McpManager {
    /// Every connected server's resources, by server.
    pub fn resources(&self) -> Vec<Managed<Resource>> {
        self.features_at_once().0
    }

    /// Every connected server's resource templates, by server.
    pub fn resource_templates(&self) -> Vec<Managed<ResourceTemplate>> {
        self.features_at_once().1
    }

    /// Every connected server's prompts, with their command names.
    pub fn prompts(&self) -> Vec<Managed<Prompt>> {
        self.features_at_once().2
    }

    /// Every connected server's resources, templates and prompts, read under one lock: read
    /// one by one, a refresh in between could pair a server's old resources with its new
    /// prompts.
    pub(crate) fn features_at_once(&self) -> Listed {
        let (mut resources, mut templates, mut prompts) = (Vec::new(), Vec::new(), Vec::new());
        {
            let state = self.shared.state.lock();
            for (name, server) in &state.servers {
                let f = &server.features;
                resources.extend(f.resources.iter().map(|r| (name.clone(), Arc::clone(r))));
                templates.extend(f.templates.iter().map(|t| (name.clone(), Arc::clone(t))));
                prompts.extend(f.prompts.iter().map(|p| (name.clone(), Arc::clone(p))));
            }
        }
        (
            with_names(resources, |r| &r.name),
            with_names(templates, |t| &t.name),
            with_names(prompts, |p| &p.name),
        )
    }

    /// Reads a resource of `server`.
    pub fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, Error> {
        self.shared.connected(server)?.0.read_resource(uri)
    }

    /// Follows a resource a tool result points at, in one call: a `resource_link` block is read
    /// from `server`; an embedded `resource` block already holds its contents (no request). Any
    /// other block is a [`Error::Config`] naming its kind.
    pub fn follow_resource(
        &self,
        server: &str,
        block: &ContentBlock,
    ) -> Result<ReadResourceResult, Error> {
        match block {
            ContentBlock::ResourceLink { uri, .. } => self.read_resource(server, uri),
            ContentBlock::Resource { resource, .. } => Ok(ReadResourceResult {
                contents: vec![(**resource).clone()],
                extra: Default::default(),
            }),
            other => Err(Error::Config {
                message: format!("a {} block points at no resource", other.kind()),
            }),
        }
    }

    /// Subscribes to a resource of `server`; its `notifications/resources/updated` reach the
    /// host's handler (`on_notification`).
    pub fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.shared.connected(server)?.0.subscribe_resource(uri)
    }

    /// Ends a subscription.
    pub fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), Error> {
        self.shared.connected(server)?.0.unsubscribe_resource(uri)
    }

    /// Gets a prompt of `server` with its arguments filled in.
    pub fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Value,
    ) -> Result<GetPromptResult, Error> {
        self.shared.connected(server)?.0.get_prompt(name, arguments)
    }

    /// Completion values for a prompt argument or a template variable of `server`.
    pub fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: Option<Value>,
    ) -> Result<Completion, Error> {
        self.shared
            .connected(server)?
            .0
            .complete(reference, argument, value, context)
    }

    /// Sets the level of the log messages `server` sends.
    pub fn set_log_level(&self, server: &str, level: LoggingLevel) -> Result<(), Error> {
        self.shared.connected(server)?.0.set_log_level(level)
    }

    /// Re-lists a connected server's resources, templates and prompts.
    pub fn refresh_server_features(&self, name: &str) -> Result<(), Error> {
        self.shared.refresh_features(name)
    }

    /// Registers a listener for changes of resources, templates and prompts after a server
    /// connected (its first listing, `list_changed` refreshes, a disconnect), given the
    /// servers whose features changed.
    pub fn on_features_changed(&self, listener: impl Fn(&[String]) + Send + Sync + 'static) {
        self.shared
            .features_listeners
            .lock()
            .push(Arc::new(listener));
    }
}

/// A listing's items, shared; a failed listing is logged and empty.
fn listed<T>(client: &Client, what: &str, listing: Result<Vec<T>, Error>) -> Vec<Arc<T>> {
    match listing {
        Ok(items) => items.into_iter().map(Arc::new).collect(),
        Err(e) => {
            log::debug!("[{}] listing {what} failed: {e}", client.name());
            Vec::new()
        }
    }
}

/// Items with the names a host offers them under (`mcp_<server>_<name>`, made unique).
fn with_names<T>(listed: Vec<(String, Arc<T>)>, name_of: fn(&T) -> &str) -> Vec<Managed<T>> {
    let identities: Vec<(&str, &str)> = listed
        .iter()
        .map(|(s, item)| (s.as_str(), name_of(item)))
        .collect();
    let names = exposed_names(&identities);
    listed
        .into_iter()
        .zip(names)
        .map(|((server, item), name)| Managed { server, item, name })
        .collect()
}
