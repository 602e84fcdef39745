//! Schemas on demand: instead of every MCP tool's definition, the model is offered a compact
//! catalogue and one search tool; what a search finds is offered as tools from then on.
//!
//! Not to be confused with the startup gate's deferred tools (known from the cache while their
//! server connects): those are offered like any other, and on demand they are in the index
//! and searchable before their server is up.
//!
//! [`OnDemand`] is the session's state for it: the index over every MCP tool (kept in step with
//! the registry at each refresh, incrementally), whether schemas are on demand right now (the
//! host's [`ToolSearchOptions`] thresholds against the current tool set), and the tools offered so far.
//! [`SearchTool`] is the tool the model calls; it reaches the session through a weak handle.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use serde_json::{json, Value};

use super::{AgentSession, Inner, ToolRegistry};
use crate::client::CallOptions;
use crate::error::Error;
use crate::tool::{AgentTool, ToolIndex, ToolOutput};

/// How the session offers MCP tools' schemas on demand, behind a search tool, instead of all
/// at once ([`SessionOptions::tool_search`](super::SessionOptions::tool_search); `None` there:
/// never). With neither threshold set, the schemas are always on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchOptions {
    /// On demand only while there are more MCP tools than this.
    pub above_tools: Option<usize>,
    /// On demand only while the MCP tools' definitions would cost more than this many tokens
    /// ([`AgentTool::definition_tokens`], summed). With `above_tools` too, on demand when
    /// either is passed.
    pub above_tokens: Option<usize>,
    /// The search tool's name (default `tool_search`; no `mcp_<server>_<tool>` name can take
    /// it, since those all start with `mcp_`).
    pub tool_name: String,
    /// The most the catalogue in the search tool's description may cost, in tokens (default
    /// 2,000): a line per tool while they fit, then how many more there are.
    pub catalogue_tokens: usize,
    /// How many tools a search returns at most (default 5, from 1 to 20; a call may ask for up
    /// to 20).
    pub results: usize,
}

impl Default for ToolSearchOptions {
    fn default() -> Self {
        ToolSearchOptions {
            above_tools: None,
            above_tokens: None,
            tool_name: "tool_search".to_owned(),
            catalogue_tokens: 2_000,
            results: 5,
        }
    }
}

/// The most tools one search may ask for.
const MOST_RESULTS: usize = 20;

/// The session's on-demand state (behind its own lock, taken after the registry's).
#[derive(Default)]
pub(super) struct OnDemand {
    pub(super) options: ToolSearchOptions,
    /// Whether the host asked for schemas on demand at all.
    enabled: bool,
    pub(super) index: ToolIndex,
    /// Whether schemas are on demand now.
    pub(super) on: bool,
    /// The MCP tools offered (found by a search, or activated by the host) while on demand.
    pub(super) offered: BTreeSet<String>,
    /// Whether the search tool is in the registry (put there by us), and whether the host
    /// turned it off.
    registered: bool,
    search_off: bool,
}

impl OnDemand {
    pub(super) fn new(options: Option<ToolSearchOptions>) -> OnDemand {
        OnDemand {
            enabled: options.is_some(),
            options: options.unwrap_or_default(),
            ..OnDemand::default()
        }
    }

    /// After the registry's MCP tools were replaced: the index follows them, the search tool
    /// is registered or taken out, and on demand only the offered MCP tools stay active.
    pub(super) fn apply(&mut self, registry: &mut ToolRegistry, session: Weak<Inner>) {
        if !self.enabled {
            return;
        }
        let mcp: Vec<Arc<dyn AgentTool>> = registry
            .mcp_tool_names()
            .iter()
            .filter_map(|n| registry.get(n).map(Arc::clone))
            .collect();
        let (indexed, dropped) = self.index.sync(mcp);
        log::debug!(
            "tool search: {} tools indexed ({indexed} new or changed, {dropped} gone)",
            self.index.len()
        );
        let (tools, tokens) = (self.options.above_tools, self.options.above_tokens);
        self.on = match (tools, tokens) {
            (None, None) => true,
            _ => {
                tools.is_some_and(|n| self.index.len() > n)
                    || tokens.is_some_and(|n| self.index.definition_tokens() > n)
            }
        };
        let name = self.options.tool_name.clone();
        if self.registered {
            self.search_off = !registry.is_active(&name);
        }
        if !self.on {
            if std::mem::take(&mut self.registered) {
                registry.remove_host_tool(&name);
            }
            return;
        }
        for tool in registry.mcp_tool_names() {
            registry.set_active(&tool, self.offered.contains(&tool));
        }
        let search = SearchTool {
            name: name.clone(),
            description: self.description(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in a few words; a tool's name; or select:NAME[,NAME...] to load tools by name"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MOST_RESULTS, "description": format!("How many tools at most (default {})", self.results())}
                },
                "required": ["query"]
            }),
            session,
        };
        if !self.registered && registry.get(&name).is_some() {
            log::warn!(
                "the tool search is not offered: the host has a tool named {name} (set \
                 ToolSearchOptions::tool_name to another name)"
            );
            return;
        }
        registry.add_host_tool(Arc::new(search));
        registry.set_active(&name, !self.search_off);
        self.registered = true;
    }

    /// How many tools a search returns without a `limit`: the options' `results`, 1 to
    /// [`MOST_RESULTS`].
    pub(super) fn results(&self) -> usize {
        self.options.results.clamp(1, MOST_RESULTS)
    }

    /// The search tool's description: what it does, then the catalogue.
    fn description(&self) -> String {
        format!(
            "Finds tools of the connected MCP servers and loads them: give what the tool should \
             do (or its name, or select:NAME), and the best matches come back with their \
             parameters; they can be called from then on. Any tool below can also be called by \
             its name directly. The {} tools:\n{}",
            self.index.len(),
            self.index.catalogue(self.options.catalogue_tokens)
        )
    }

    /// Offers `names` (MCP tools' names; others are passed over); whether any was not offered
    /// before. False when schemas are not on demand.
    pub(super) fn offer(&mut self, registry: &mut ToolRegistry, names: &[String]) -> bool {
        if !self.on {
            return false;
        }
        let mut new = false;
        for name in names {
            if registry.is_mcp_tool(name) {
                self.offered.insert(name.clone());
                new |= !registry.is_active(name);
                registry.set_active(name, true);
            }
        }
        new
    }
}

/// The session's side of schemas on demand.
impl AgentSession {
    /// Whether MCP tools' schemas are on demand now (see [`ToolSearchOptions`]): the model is
    /// offered the search tool and what it found, not every MCP tool.
    pub fn schemas_on_demand(&self) -> bool {
        self.inner.on_demand.lock().on
    }

    /// The tools that best answer `query` (see [`crate::host::ToolIndex`]), best first, at
    /// most `limit`, without offering them. Empty unless [`SessionOptions::tool_search`](super::SessionOptions::tool_search) is on
    /// (anything but never).
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<Arc<dyn AgentTool>> {
        let registry = self.inner.registry.lock();
        let on_demand = self.inner.on_demand.lock();
        on_demand
            .index
            .search(query, limit)
            .iter()
            .filter_map(|t| registry.get(t.name()).cloned())
            .collect()
    }

    /// Searches as the search tool does and offers what it found (see
    /// [`AgentSession::offer_tools`]); `limit` defaults to the options' `results`.
    fn offer_search(&self, query: &str, limit: Option<usize>) -> Vec<Arc<dyn AgentTool>> {
        let (found, snapshot) = {
            let mut registry = self.inner.registry.lock();
            let mut on_demand = self.inner.on_demand.lock();
            let limit = limit.unwrap_or_else(|| on_demand.results());
            let names: Vec<String> = on_demand
                .index
                .search(query, limit)
                .iter()
                .map(|t| t.name().to_owned())
                .collect();
            let found: Vec<Arc<dyn AgentTool>> = names
                .iter()
                .filter_map(|n| registry.get(n).cloned())
                .collect();
            let new = on_demand.offer(&mut registry, &names);
            (found, new.then(|| self.snapshot()))
        };
        if let Some(snapshot) = snapshot {
            self.notify(snapshot);
        }
        found
    }

    /// Offers MCP tools by name, as a search that found them would: they are active until the
    /// session ends or the host drops them. Names of no MCP tool are passed over. Whether any
    /// was newly offered (false too when schemas are not on demand now).
    pub fn offer_tools(&self, names: &[String]) -> bool {
        let snapshot = {
            let mut registry = self.inner.registry.lock();
            if !self.inner.on_demand.lock().offer(&mut registry, names) {
                return false;
            }
            self.snapshot()
        };
        self.notify(snapshot);
        true
    }

    /// The MCP tools offered so far while schemas are on demand, by name.
    pub fn offered_tools(&self) -> Vec<String> {
        self.inner
            .on_demand
            .lock()
            .offered
            .iter()
            .cloned()
            .collect()
    }

    /// Drops every offered tool: only the search tool (and the host's own tools) stay offered.
    pub fn drop_offered_tools(&self) {
        let snapshot = {
            let mut registry = self.inner.registry.lock();
            let mut on_demand = self.inner.on_demand.lock();
            for name in std::mem::take(&mut on_demand.offered) {
                if registry.is_mcp_tool(&name) {
                    registry.set_active(&name, false);
                }
            }
            self.snapshot()
        };
        self.notify(snapshot);
    }

    /// The catalogue the search tool's description carries (a line per MCP tool within the
    /// options' `catalogue_tokens`); empty unless [`SessionOptions::tool_search`](super::SessionOptions::tool_search) is on.
    pub fn tool_catalogue(&self) -> String {
        let on_demand = self.inner.on_demand.lock();
        on_demand
            .index
            .catalogue(on_demand.options.catalogue_tokens)
    }
}

/// The tool the model searches with (see the module docs).
struct SearchTool {
    name: String,
    description: String,
    parameters: Value,
    session: Weak<Inner>,
}

impl AgentTool for SearchTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> &str {
        "mcp tool search"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn execute(&self, arguments: Value, options: CallOptions<'_>) -> Result<ToolOutput, Error> {
        if options.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            return Err(Error::Cancelled);
        }
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return Ok(ToolOutput::error("query (a string) is required"));
        };
        let Some(inner) = self.session.upgrade() else {
            return Ok(ToolOutput::error("the session has ended"));
        };
        let session = AgentSession { inner };
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map(|n| (n as usize).clamp(1, MOST_RESULTS));
        let found = session.offer_search(query, limit);
        Ok(found_output(query, &found))
    }
}

/// The search tool's answer: each tool found with its parameters, as text and as
/// `structuredContent` (`{"tools": [{name, description, input_schema}]}`).
fn found_output(query: &str, found: &[Arc<dyn AgentTool>]) -> ToolOutput {
    if found.is_empty() {
        return ToolOutput::text(format!(
            "No tool matches {query:?}. Try other words (what the tool does, or the server's \
             name), or select:NAME with a name from the catalogue."
        ));
    }
    let mut text = format!(
        "{} tool{} found; {} can be called now:\n",
        found.len(),
        if found.len() == 1 { "" } else { "s" },
        if found.len() == 1 { "it" } else { "they" }
    );
    let mut tools = Vec::with_capacity(found.len());
    for t in found {
        let tool = t;
        text.push_str(&format!(
            "\n## {}\n{}\nParameters: {}\n",
            tool.name(),
            tool.description(),
            tool.parameters()
        ));
        tools.push(json!({
            "name": tool.name(),
            "description": tool.description(),
            "input_schema": tool.parameters(),
        }));
    }
    let mut output = ToolOutput::text(text);
    output.result.structured_content = Some(json!({ "tools": tools }));
    output
}
