//! Schemas on demand: instead of every MCP tool's definition, the model is offered a compact
//! catalogue and one search tool; what a search finds is offered as tools from then on.
//!
//! Not to be confused with the startup gate's deferred tools (known from the cache while their
//! server connects): those are offered like any other, and on demand they are in the index
//! and searchable before their server is up.
//!
//! [`OnDemand`] is the session's state for it: the index over every MCP tool (kept in step with
//! the registry at each refresh, incrementally), whether schemas are on demand right now (the
//! host's [`SchemasOnDemand`] against the current tool set), and the tools offered so far.
//! [`SearchTool`] is the tool the model calls; it reaches the session through a weak handle.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use serde_json::{json, Value};

use super::{AgentSession, Inner, ToolRegistry};
use crate::client::CallOptions;
use crate::error::Error;
use crate::loader::LoadedTool;
use crate::tool::{AgentTool, ToolIndex, ToolOutput};

/// When the session offers the model a search tool instead of every MCP tool's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemasOnDemand {
    /// Every MCP tool is offered with its schema (the default).
    #[default]
    Never,
    /// Always behind the search tool.
    Always,
    /// Behind the search tool while there are more MCP tools than this.
    AboveTools(usize),
    /// Behind the search tool while the MCP tools' definitions would cost more than this many
    /// tokens ([`AgentTool::definition_tokens`], summed).
    AboveTokens(usize),
}

/// How the session offers MCP tools' schemas on demand ([`SessionOptions::tool_search`]).
///
/// [`SessionOptions::tool_search`]: super::SessionOptions::tool_search
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchOptions {
    /// When (default [`SchemasOnDemand::Never`]: off).
    pub when: SchemasOnDemand,
    /// The search tool's name (default `tool_search`; no `mcp_<server>_<tool>` name can take
    /// it, since those all start with `mcp_`).
    pub tool_name: String,
    /// The most the catalogue in the search tool's description may cost, in tokens (default
    /// 2,000): a line per tool while they fit, then how many more there are.
    pub catalogue_tokens: usize,
    /// How many tools a search returns at most (default 5; a call may ask for up to 20).
    pub results: usize,
}

impl Default for ToolSearchOptions {
    fn default() -> Self {
        ToolSearchOptions {
            when: SchemasOnDemand::Never,
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
    pub(super) index: ToolIndex,
    /// Whether schemas are on demand now.
    pub(super) on: bool,
    /// The MCP tools offered (found by a search, or activated by the host) while on demand.
    pub(super) offered: BTreeSet<String>,
}

impl OnDemand {
    pub(super) fn new(options: ToolSearchOptions) -> OnDemand {
        OnDemand {
            options,
            ..OnDemand::default()
        }
    }

    /// After the registry's MCP tools were replaced: the index follows them, the search tool
    /// is registered or taken out, and on demand only the offered MCP tools stay active.
    pub(super) fn apply(&mut self, registry: &mut ToolRegistry, session: Weak<Inner>) {
        if self.options.when == SchemasOnDemand::Never {
            return;
        }
        let mcp: Vec<Arc<dyn AgentTool>> = registry
            .mcp_tool_names()
            .iter()
            .filter_map(|n| registry.get(n).map(|t| Arc::clone(&t.tool)))
            .collect();
        let (indexed, dropped) = self.index.sync(mcp);
        log::debug!(
            "tool search: {} tools indexed ({indexed} new or changed, {dropped} gone)",
            self.index.len()
        );
        self.on = match self.options.when {
            SchemasOnDemand::Never => false,
            SchemasOnDemand::Always => true,
            SchemasOnDemand::AboveTools(n) => self.index.len() > n,
            SchemasOnDemand::AboveTokens(n) => self.index.definition_tokens() > n,
        };
        let name = self.options.tool_name.clone();
        if !self.on {
            registry.remove_host_tool(&name);
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
                    "limit": {"type": "integer", "minimum": 1, "maximum": MOST_RESULTS, "description": format!("How many tools at most (default {})", self.options.results)}
                },
                "required": ["query"]
            }),
            session,
        };
        registry.add_host_tool(Arc::new(search), "mcp tool search");
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

    /// Offers `names` (an MCP tool on demand); false when schemas are not on demand.
    pub(super) fn offer(&mut self, registry: &mut ToolRegistry, names: &[String]) -> bool {
        if !self.on {
            return false;
        }
        for name in names {
            if registry.is_mcp_tool(name) {
                self.offered.insert(name.clone());
                registry.set_active(name, true);
            }
        }
        true
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
fn found_output(query: &str, found: &[LoadedTool]) -> ToolOutput {
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
        let tool = &t.tool;
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
