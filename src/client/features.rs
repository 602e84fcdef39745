//! What a server offers beside tools: resources and their templates, prompts, completions, and
//! its log level. Each list follows `nextCursor` to the end, guarded like `tools/list`.
//!
//! A server that did not declare the capability a call needs has nothing to list (an empty
//! list), and a call that needs it fails with `-32601` as the server would answer; nothing is
//! sent in either case.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::page::Page;
use super::{CallOptions, Client, MAX_LIST_PAGES};
use crate::error::Error;
use crate::jsonrpc::codes;
use crate::protocol::{
    methods, CompleteResult, Completion, CompletionRef, GetPromptResult, LoggingLevel, Prompt,
    ReadResourceResult, Resource, ResourceTemplate,
};

/// Which capability a request needs.
#[derive(Clone, Copy)]
enum Needs {
    Resources,
    Prompts,
    Completions,
    Logging,
}

impl Client {
    fn declares(&self, needs: Needs) -> bool {
        let init = self.initialize_result();
        let caps = &init.capabilities;
        match needs {
            Needs::Resources => caps.resources.is_some(),
            Needs::Prompts => caps.prompts.is_some(),
            Needs::Completions => caps.extra.contains_key("completions"),
            Needs::Logging => caps.logging.is_some(),
        }
    }

    fn require(&self, needs: Needs, method: &str) -> Result<(), Error> {
        if self.declares(needs) {
            return Ok(());
        }
        Err(Error::Rpc {
            code: codes::METHOD_NOT_FOUND,
            message: format!("the server did not declare the capability {method} needs"),
            data: None,
        })
    }

    /// Every page of a paginated list: the items under `key`, following `nextCursor` until it
    /// is absent, a cursor repeats, or [`MAX_LIST_PAGES`] pages were read.
    pub(crate) fn list_all<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for n in 0..MAX_LIST_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let raw = self.request_raw(method, params, CallOptions::default())?;
            let page = Page::<T>::read(method, key, &raw)?;
            drop(raw);
            if method == methods::TOOLS_LIST {
                self.note_tools_page(page.ttl_ms, page.cache_scope.as_deref(), n == 0);
            }
            let (list, next) = (page.items, page.next_cursor);
            items.extend(list);
            match next {
                None => return Ok(items),
                Some(next) if !seen.insert(next.clone()) => {
                    log::warn!(
                        "[{}] {method} repeated the cursor {next:?}; stopping with {} items",
                        self.name(),
                        items.len()
                    );
                    return Ok(items);
                }
                Some(next) => cursor = Some(next),
            }
        }
        log::warn!(
            "[{}] {method} still had more pages after {MAX_LIST_PAGES}; stopping with {} items",
            self.name(),
            items.len()
        );
        Ok(items)
    }

    /// Every resource (all pages). Empty when the server declared no `resources`.
    pub fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        if !self.declares(Needs::Resources) {
            return Ok(Vec::new());
        }
        self.list_all(methods::RESOURCES_LIST, "resources")
    }

    /// Every resource template (all pages). Empty when the server declared no `resources`.
    pub fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        if !self.declares(Needs::Resources) {
            return Ok(Vec::new());
        }
        self.list_all(methods::RESOURCE_TEMPLATES_LIST, "resourceTemplates")
    }

    /// Reads a resource; text and blob contents are kept as sent.
    pub fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.require(Needs::Resources, methods::RESOURCES_READ)?;
        self.request_as(
            methods::RESOURCES_READ,
            Some(json!({ "uri": uri })),
            CallOptions::default(),
        )
    }

    /// Asks to be told when `uri` changes: `notifications/resources/updated` then reaches the
    /// handler's `on_notification`.
    pub fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.require(Needs::Resources, methods::RESOURCES_SUBSCRIBE)?;
        self.request(
            methods::RESOURCES_SUBSCRIBE,
            Some(json!({ "uri": uri })),
            CallOptions::default(),
        )
        .map(|_| ())
    }

    /// Stops being told about `uri`.
    pub fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        self.require(Needs::Resources, methods::RESOURCES_UNSUBSCRIBE)?;
        self.request(
            methods::RESOURCES_UNSUBSCRIBE,
            Some(json!({ "uri": uri })),
            CallOptions::default(),
        )
        .map(|_| ())
    }

    /// Every prompt (all pages). Empty when the server declared no `prompts`.
    pub fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        if !self.declares(Needs::Prompts) {
            return Ok(Vec::new());
        }
        self.list_all(methods::PROMPTS_LIST, "prompts")
    }

    /// A prompt with its arguments filled in.
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, Error> {
        self.require(Needs::Prompts, methods::PROMPTS_GET)?;
        let mut params = json!({ "name": name });
        if !arguments.is_null() {
            params["arguments"] = arguments;
        }
        self.request_as(methods::PROMPTS_GET, Some(params), CallOptions::default())
    }

    /// Completion values for `argument` (with its current `value`) of a prompt or a resource
    /// template; `context` holds the other arguments already given (2025-06-18+), if any.
    pub fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: Option<Value>,
    ) -> Result<Completion, Error> {
        self.require(Needs::Completions, methods::COMPLETION_COMPLETE)?;
        let mut params = json!({
            "ref": reference.to_value(),
            "argument": {"name": argument, "value": value},
        });
        if let Some(arguments) = context {
            params["context"] = json!({ "arguments": arguments });
        }
        let result: CompleteResult = self.request_as(
            methods::COMPLETION_COMPLETE,
            Some(params),
            CallOptions::default(),
        )?;
        Ok(result.completion)
    }

    /// Sets the level of the log messages the server sends (`notifications/message`). On a
    /// 2026-07-28 connection nothing is sent: the level travels in each later request's `_meta`.
    pub fn set_log_level(&self, level: LoggingLevel) -> Result<(), Error> {
        self.require(Needs::Logging, methods::LOGGING_SET_LEVEL)?;
        if let super::SessionEra::Stateless(session) = &self.inner.era {
            session.set_log_level(json!(level));
            return Ok(());
        }
        self.request(
            methods::LOGGING_SET_LEVEL,
            Some(json!({ "level": level })),
            CallOptions::default(),
        )
        .map(|_| ())
    }
}
