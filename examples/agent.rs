//! An agent loop: a host offers its MCP tools to a model, runs each tool call the model asks
//! for, hands the result back, and stops when the model answers (or after a bound on the
//! turns, as every agent loop needs).
//!
//! The model is scripted so the loop runs anywhere: it reads the offered tools' descriptions
//! and picks the one its plan needs, as a real model would; put a model API's request where
//! `ScriptedModel::next` is.
//!
//! ```sh
//! cargo build   # the demo servers of examples/mcp.json are the `mcp` command's own
//! MCP_CLI=target/debug/mcp cargo run --example agent -- --config examples/mcp.json
//! cargo run --example agent   # the servers your other tools configured, found where they keep them
//! ```

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::config::{file_source, ProjectTrust};
use mcp_runtime::{create_agent_session, AgentTool, CallOptions, SessionOptions};
use serde_json::{json, Value};

/// What the model says next: call a tool, or answer.
enum Turn {
    Call { tool: String, arguments: Value },
    Answer(String),
}

/// A stand-in for a model: a plan of steps, each a word the wanted tool's description has
/// and the arguments to call it with.
struct ScriptedModel {
    plan: Vec<(&'static str, Value)>,
}

impl ScriptedModel {
    /// The next turn, given the tools offered and what the tools answered so far.
    fn next(&mut self, tools: &[Arc<dyn AgentTool>], results: &[String]) -> Turn {
        while !self.plan.is_empty() {
            let (word, arguments) = self.plan.remove(0);
            let wanted = tools
                .iter()
                .find(|t| t.description().to_lowercase().contains(word));
            if let Some(tool) = wanted {
                return Turn::Call {
                    tool: tool.name().to_owned(),
                    arguments,
                };
            }
            eprintln!("model: no tool offered {word}; skipping that step");
        }
        Turn::Answer(format!("Here is what I found: {}", results.join(" | ")))
    }
}

/// The file after `--config`, if one was given.
fn config_file() -> Result<Option<String>, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(None),
        (Some("--config"), Some(path)) => Ok(Some(path)),
        _ => Err("usage: agent [--config FILE]".into()),
    }
}

fn main() -> ExitCode {
    env_logger::init(); // RUST_LOG=mcp_runtime=debug shows what the library does
    let config = match config_file() {
        Ok(config) => config,
        Err(usage) => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let mut options = SessionOptions::default();
    if let Some(path) = config {
        // Only that file; the user named it, so its servers start without asking.
        options.config.sources = Some(vec![file_source(path)]);
        options.config.project_trust = ProjectTrust::TrustAll;
    }
    let session = create_agent_session(options);
    for e in session.startup_errors() {
        eprintln!("{}: {}", e.path, e.error);
    }
    for s in session.needs_approval() {
        eprintln!(
            "{} waits for approval ({})",
            s.name,
            s.source.path.display()
        );
    }

    // What a model is sent: each tool's name, description and parameters.
    let tools = session.active_tools();
    let tokens: usize = tools.iter().map(|t| t.definition_tokens()).sum();
    println!("offering {} tools (about {tokens} tokens)", tools.len());

    let mut model = ScriptedModel {
        plan: vec![
            ("adds", json!({"a": 2, "b": 3.5})),
            ("greets", json!({"name": "Ada"})),
            ("weather", json!({"city": "Turin"})),
        ],
    };
    let mut results = Vec::new();
    let mut answered = false;
    for _turn in 0..8 {
        // The tools offered may change between turns (a late server, a list_changed).
        match model.next(&session.active_tools(), &results) {
            Turn::Call { tool, arguments } => {
                let Some(t) = session.tool(&tool) else {
                    results.push(format!("{tool}: no such tool"));
                    continue;
                };
                // A failed call is an output with `is_error` for the model to read; only a
                // cancellation is an `Err`.
                match t.execute(arguments, CallOptions::timeout(Duration::from_secs(30))) {
                    Ok(out) => {
                        println!("{tool} -> {}", out.model_text());
                        results.push(out.model_text());
                    }
                    Err(e) => results.push(format!("{tool}: {e}")),
                }
            }
            Turn::Answer(text) => {
                println!("model: {text}");
                answered = true;
                break;
            }
        }
    }
    session.close(); // every server stopped, every thread ended
    if answered {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
