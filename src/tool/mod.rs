//! The tools layer: MCP tools as a host sees them.
//!
//! [`AgentTool`] is the host-facing trait (a tool as an agent sees it; the MCP definition is [`crate::protocol::Tool`]) (name, label, description, parameters, `execute`).
//! An MCP tool (`McpTool`, internal) calls a server's tool; one known from the cache while its
//! server is still connecting (deferred: [`AgentTool::is_deferred`]) waits for it. [`build_tools`] turns the manager's current
//! tool set into tool objects with their exposed names ([`naming`](crate::manager::naming)); results render as text
//! with [`render_text`].

use std::sync::Arc;

use serde_json::{json, Value};

use crate::client::CallOptions;
use crate::config::SourceMeta;
use crate::error::Error;
use crate::protocol::{CallToolResult, ContentBlock, Tool as ToolDefinition};

/// The accessors every tool built on a [`Spec`] shares (inside an `impl AgentTool`).
macro_rules! spec_accessors {
    () => {
        fn name(&self) -> &str {
            &self.spec.name
        }

        fn label(&self) -> &str {
            &self.spec.label
        }

        fn description(&self) -> &str {
            &self.spec.description
        }

        fn parameters(&self) -> &Value {
            self.spec.parameters()
        }

        fn mcp_identity(&self) -> Option<(&str, &str)> {
            Some((&self.spec.server, &self.spec.definition.name))
        }

        fn mcp_definition(&self) -> Option<&crate::protocol::Tool> {
            Some(&self.spec.definition)
        }

        fn source(&self) -> Option<&crate::config::SourceMeta> {
            self.spec.source.as_ref()
        }
    };
}

mod budget;
mod build;
mod mcp_tool;
mod render;
mod schema;
mod search;
mod terms;
#[cfg(test)]
pub(crate) mod test_tools;
pub(crate) mod tokens;

pub(crate) use build::build_tools_numbered;
pub use build::{build_tools, parameters_of};
pub(crate) use mcp_tool::McpTool;
pub use render::render_text;
pub use schema::schema_mismatch;
pub use search::ToolIndex;

/// A tool a host can register and call.
pub trait AgentTool: Send + Sync {
    /// The exposed name, e.g. `mcp_files_read`.
    fn name(&self) -> &str;
    /// A short label, e.g. `files/read`.
    fn label(&self) -> &str;
    /// What it does (for the model).
    fn description(&self) -> &str;
    /// The JSON schema of its arguments.
    fn parameters(&self) -> &Value;
    /// Runs it. Failures of the server or the tool are a [`ToolOutput`] with `is_error`; an MCP
    /// tool fails only when the caller cancels it, with [`Error::Cancelled`].
    /// `options` are those of any request ([`CallOptions`]): a timeout (default: the server's
    /// `toolTimeout`, else the connection's), a cancel signal, progress reports on the calling
    /// thread.
    fn execute(&self, arguments: Value, options: CallOptions<'_>) -> Result<ToolOutput, Error>;
    /// The MCP server and tool behind it, for MCP tools.
    fn mcp_identity(&self) -> Option<(&str, &str)> {
        None
    }
    /// The MCP definition behind it as its server sent it (title, annotations, output
    /// schema, `_meta`), for MCP tools.
    fn mcp_definition(&self) -> Option<&ToolDefinition> {
        None
    }
    /// Where an MCP tool's server config came from (the tool whose config file, its level and
    /// display name), when known.
    fn source(&self) -> Option<&SourceMeta> {
        None
    }
    /// Where it came from, for display: `mcp:<server> via <provider>` (`mcp:<server>` when
    /// the config's source is unknown) for an MCP tool (see [`display_path`]), its
    /// [`label`](AgentTool::label) for a host's own tool.
    fn origin(&self) -> String {
        match self.mcp_identity() {
            Some((server, _)) => {
                display_path(server, self.source().map(|s| s.provider_name.as_str()))
            }
            None => self.label().to_owned(),
        }
    }
    /// Whether it is an MCP tool known from the tool cache while its server is still
    /// connecting (a deferred tool): a call first waits for the server's connection, bounded by
    /// the call's timeout and cancel signal.
    fn is_deferred(&self) -> bool {
        false
    }
    /// What offering this tool costs in a model's context, in tokens: an estimate, a token per
    /// [`BYTES_PER_TOKEN`](crate::host::BYTES_PER_TOKEN) bytes of its name, description and
    /// parameters as compact JSON (measured against a real tokenizer it over-estimates by about
    /// a tenth; see *Hundreds of tools* in the `host` module's docs).
    fn definition_tokens(&self) -> usize {
        tokens::definition_tokens(self.name(), self.description(), self.parameters())
    }
}

impl std::fmt::Debug for dyn AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name())
            .field("origin", &self.origin())
            .finish_non_exhaustive()
    }
}

/// How a server's tools are shown as coming from: `mcp:<server> via <providerName>`, or
/// `mcp:<server>` when the source is unknown.
pub fn display_path(server: &str, provider_name: Option<&str>) -> String {
    match provider_name {
        Some(p) => format!("mcp:{server} via {p}"),
        None => format!("mcp:{server}"),
    }
}

/// Where an MCP tool's output came from (the fields of [`ToolOutput`] that say so).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ToolDetails {
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) source: Option<SourceMeta>,
}

/// A tool's output: the result exactly as the server sent it (or, when the call failed, one
/// text block `MCP error: <message>`), whether it is an error, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The `CallToolResult`: content blocks, structured content, `isError`, `_meta`, as sent.
    pub result: CallToolResult,
    /// True when the tool (or the server, or the transport) failed.
    pub is_error: bool,
    /// The server's configured name (empty for a host's own tool).
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// Where the server's config came from (`provider` `claude`, `mcp-json`, ..., its display
    /// name, the file).
    pub source: Option<SourceMeta>,
    /// Where the tool declared an `outputSchema` and its `structuredContent` is missing or does
    /// not match it: what is wrong (see [`schema::schema_mismatch`]). Reported, never enforced:
    /// the result stays as sent.
    pub schema_problem: Option<String>,
    /// When the output stands for a failure of the call itself (the server could not be
    /// reached, the call timed out, the server answered with a JSON-RPC error, ...), not for
    /// the tool's own `isError` result: that error, so a host (or a script) can tell the two
    /// apart. `None` for every result the server sent.
    pub failure: Option<crate::error::Error>,
    /// What the model is shown where that is not the whole rendering
    /// ([`ToolOutput::full_text`]): the rendering cut to the manager's
    /// [`OutputBudget`](crate::manager::OutputBudget) with a notice, or with binary content
    /// written to files. `None` when the whole rendering fits. [`ToolOutput::model_text`] gives
    /// it.
    pub shown: Option<String>,
}

impl ToolOutput {
    fn from_result(result: CallToolResult, details: ToolDetails) -> ToolOutput {
        ToolOutput {
            is_error: result.is_error(),
            result,
            server: details.server,
            tool: details.tool,
            source: details.source,
            schema_problem: None,
            failure: None,
            shown: None,
        }
    }

    /// A successful output of one text block, with no server (a host's own tool's result).
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput::from_result(
            CallToolResult {
                content: vec![ContentBlock::text(text.into())],
                ..CallToolResult::default()
            },
            ToolDetails::default(),
        )
    }

    /// An error output: one text block `MCP error: <message>` (with no server: set `server`,
    /// `tool` and `source` where there is one).
    pub fn error(message: impl std::fmt::Display) -> ToolOutput {
        ToolOutput::from_result(
            CallToolResult {
                content: vec![ContentBlock::text(format!("MCP error: {message}"))],
                is_error: Some(true),
                ..CallToolResult::default()
            },
            ToolDetails::default(),
        )
    }

    /// An error output for a failure of the call (see [`ToolOutput::failure`]): the text
    /// [`ToolOutput::error`] gives, and the error kept.
    pub(crate) fn failed(e: crate::error::Error, details: ToolDetails) -> ToolOutput {
        ToolOutput {
            failure: Some(e.clone()),
            ..ToolOutput::error(&e).with_origin(details)
        }
    }

    /// The output, saying which server and tool produced it.
    pub(crate) fn with_origin(self, details: ToolDetails) -> ToolOutput {
        ToolOutput {
            server: details.server,
            tool: details.tool,
            source: details.source,
            ..self
        }
    }

    /// The content blocks.
    pub fn content(&self) -> &[ContentBlock] {
        &self.result.content
    }

    /// The structured content.
    pub fn structured_content(&self) -> Option<&Value> {
        self.result.structured_content.as_ref()
    }

    /// What the model is shown: every block rendered (text as it is, other blocks as
    /// placeholders, structured content when there is no text), `Error: ` first for an error
    /// (see [`render_text`]), within the manager's
    /// [`OutputBudget`](crate::manager::OutputBudget) (25,000 tokens by default): a longer
    /// rendering is cut, and a notice says how much was left out and how to get it (see
    /// [`ToolOutput::shown`]). [`CallToolResult::text`] is the text blocks only.
    pub fn model_text(&self) -> String {
        match &self.shown {
            Some(shown) => shown.clone(),
            None => render_text(&self.result),
        }
    }

    /// The whole rendering ([`render_text`]), whatever the budget.
    pub fn full_text(&self) -> String {
        render_text(&self.result)
    }
}

/// What an MCP tool is: its identity, its presentation, and the call.
#[derive(Clone)]
pub(crate) struct Spec {
    pub name: String,
    pub label: String,
    pub description: String,
    /// The parameters schema, only where it differs from the definition's `inputSchema`
    /// (see [`parameters_of`]); otherwise the definition's is shown as it is, uncopied.
    pub parameters: Option<Value>,
    pub server: String,
    pub definition: Arc<ToolDefinition>,
    pub source: Option<SourceMeta>,
}

impl Spec {
    pub(crate) fn parameters(&self) -> &Value {
        self.parameters
            .as_ref()
            .unwrap_or(&self.definition.input_schema)
    }

    pub(crate) fn details(&self) -> ToolDetails {
        ToolDetails {
            server: self.server.clone(),
            tool: self.definition.name.clone(),
            source: self.source.clone(),
        }
    }

    /// Calls through the manager, turning errors into outputs; a cancellation stays an error.
    pub(crate) fn call(
        &self,
        manager: &crate::manager::McpManager,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<ToolOutput, Error> {
        let mut output = call_through(
            manager,
            &self.server,
            &self.definition.name,
            arguments,
            options,
            self.details(),
        )?;
        if let (Some(schema), false) = (&self.definition.output_schema, output.is_error) {
            output.schema_problem = match &output.result.structured_content {
                Some(structured) => schema::schema_mismatch(schema, structured),
                None => {
                    Some("the tool declares an outputSchema but sent no structuredContent".into())
                }
            };
            if let Some(problem) = &output.schema_problem {
                log::warn!(
                    "[{}] {}: structuredContent does not match its outputSchema: {problem}",
                    self.server,
                    self.definition.name
                );
            }
        }
        Ok(output)
    }
}

/// A call through the manager as every MCP tool makes it (subagents' proxies too): errors
/// become an output with `is_error`, a cancellation stays [`Error::Cancelled`], and what the
/// model is shown keeps within the manager's output budget.
pub(crate) fn call_through(
    manager: &crate::manager::McpManager,
    server: &str,
    tool: &str,
    arguments: Value,
    options: CallOptions<'_>,
    details: ToolDetails,
) -> Result<ToolOutput, Error> {
    let arguments = if arguments.is_null() {
        json!({})
    } else {
        arguments
    };
    let mut output = match manager.call_tool_with(server, tool, arguments, options) {
        Ok(result) => ToolOutput::from_result(result, details),
        Err(Error::Cancelled) => return Err(Error::Cancelled),
        Err(e) => ToolOutput::failed(e, details),
    };
    budget::apply(&mut output, manager);
    Ok(output)
}
