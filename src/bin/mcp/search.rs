//! `mcp search QUERY`: the tools that best answer a query, ranked as a host's tool search
//! ranks them ([`ToolIndex`]).

use mcp_runtime::host::ToolIndex;
use serde_json::{json, Value};

use crate::args::Args;
use crate::servers::Session;

/// How many tools a search shows without `--limit`.
const DEFAULT_LIMIT: usize = 5;

/// Prints the tools found (the failed servers on stderr); false when none was.
pub fn run(session: &Session, query: &str, args: &Args) -> bool {
    let mut index = ToolIndex::new();
    index.sync(session.model_tools().cloned());
    let found = index.search(query, args.limit.unwrap_or(DEFAULT_LIMIT));
    if args.json {
        let rows: Vec<Value> = found
            .iter()
            .map(|t| {
                let (server, tool) = t.mcp_identity().unwrap_or(("", ""));
                json!({"name": t.name(), "server": server, "tool": tool,
                       "description": t.description(), "inputSchema": t.parameters(),
                       "definitionTokens": t.definition_tokens()})
            })
            .collect();
        outln!("{}", Value::Array(rows));
    } else {
        let width = crate::output::column_width(found.iter().map(|t| t.name()));
        for t in &found {
            let description = t.description().lines().next().unwrap_or("");
            outln!("{:width$}  {description}", t.name());
        }
    }
    if found.is_empty() && !args.json {
        eprintln!("mcp: no tool matches {query:?} among {} tools", index.len());
    }
    for e in &session.errors {
        eprintln!("{}", crate::servers::error_line(e));
    }
    !found.is_empty()
}
