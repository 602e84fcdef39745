//! What the servers offer a session beside tools: resources, resource templates and prompts
//! (each prompt with its command name), as a snapshot that follows the manager's
//! `on_features_changed`, and the calls that reach them.

use std::sync::Arc;

use serde_json::Value;

use super::{AgentSession, Listener};
use crate::error::Error;
use crate::manager::{Managed, McpManager};
use crate::protocol::{Completion, CompletionRef, GetPromptResult, ReadResourceResult};
use crate::protocol::{Prompt, Resource, ResourceTemplate};

/// What the connected servers offer beside tools, as of the last refresh.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct McpFeatures {
    /// Every connected server's resources.
    pub resources: Vec<Managed<Resource>>,
    /// Every connected server's resource templates.
    pub templates: Vec<Managed<ResourceTemplate>>,
    /// Every connected server's prompts, with their command names.
    pub prompts: Vec<Managed<Prompt>>,
}

impl McpFeatures {
    /// The manager's current resources, templates and prompts.
    pub(crate) fn of(manager: &McpManager) -> McpFeatures {
        let (resources, templates, prompts) = manager.features_at_once();
        McpFeatures {
            resources,
            templates,
            prompts,
        }
    }

    /// The prompt offered under `command` (`mcp_<server>_<prompt>`).
    pub(crate) fn prompt(&self, command: &str) -> Option<&Managed<Prompt>> {
        self.prompts.iter().find(|p| p.name == command)
    }
}

impl AgentSession {
    /// Every connected server's resources.
    pub fn resources(&self) -> Vec<Managed<Resource>> {
        self.inner.features.lock().resources.clone()
    }

    /// Every connected server's resource templates.
    pub fn resource_templates(&self) -> Vec<Managed<ResourceTemplate>> {
        self.inner.features.lock().templates.clone()
    }

    /// Every connected server's prompts, with their command names.
    pub fn prompts(&self) -> Vec<Managed<Prompt>> {
        self.inner.features.lock().prompts.clone()
    }

    /// The prompt offered under `command` (`mcp_<server>_<prompt>`).
    pub fn prompt(&self, command: &str) -> Option<Managed<Prompt>> {
        self.inner.features.lock().prompt(command).cloned()
    }

    /// Reads a resource of `server`.
    pub fn read_resource(&self, server: &str, uri: &str) -> Result<ReadResourceResult, Error> {
        self.connected_manager(server)?.read_resource(server, uri)
    }

    /// Gets the prompt offered under `command` with its arguments filled in.
    pub fn get_prompt(&self, command: &str, arguments: Value) -> Result<GetPromptResult, Error> {
        let prompt = self.prompt(command).ok_or_else(|| Error::Config {
            message: format!("no prompt is offered as {command:?}"),
        })?;
        self.connected_manager(&prompt.server)?.get_prompt(
            &prompt.server,
            &prompt.item.name,
            arguments,
        )
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
        self.connected_manager(server)?
            .complete(server, reference, argument, value, context)
    }

    fn connected_manager(&self, server: &str) -> Result<&McpManager, Error> {
        self.inner
            .manager
            .as_ref()
            .ok_or_else(|| Error::not_connected(server))
    }

    /// Called after every features refresh that changed something, with the session (its
    /// [`resources`](AgentSession::resources), [`resource_templates`](AgentSession::resource_templates)
    /// and [`prompts`](AgentSession::prompts) are the new ones). Called with no lock of the
    /// session held.
    pub fn on_features_refresh(&self, listener: impl Fn(&AgentSession) + Send + Sync + 'static) {
        self.inner
            .features_listeners
            .lock()
            .push(Arc::new(listener));
    }

    /// Takes the manager's current resources, templates and prompts, and tells the listeners
    /// when they changed.
    pub fn refresh_features(&self) {
        let Some(manager) = &self.inner.manager else {
            return;
        };
        {
            // One refresh at a time, from reading to storing: two that overlap (the startup's
            // and a change's) could otherwise store in the wrong order, the older snapshot
            // last. Lock order: `refreshing`, then the manager's state lock (inside `of`),
            // then `features`; listeners are called with none of them held.
            let _one = self.inner.refreshing.lock();
            let fresh = McpFeatures::of(manager);
            let mut features = self.inner.features.lock();
            if *features == fresh {
                return;
            }
            *features = fresh;
        }
        let listeners: Vec<Listener> = self.inner.features_listeners.lock().clone();
        for l in listeners {
            l(self);
        }
    }
}
