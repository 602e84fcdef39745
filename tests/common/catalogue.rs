//! The captured catalogues of real servers (`tests/fixtures/catalogue`), as the tool-search
//! tests and the scaling example read them.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use mcp_runtime::host::{AgentTool, ToolOutput};
use mcp_runtime::manager::exposed_names;
use mcp_runtime::protocol::Tool;
use mcp_runtime::{CallOptions, Error};
use serde_json::Value;

/// The fixtures' folder.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalogue")
}

/// The catalogue file of server `name`, as a string for a command line.
pub fn file(name: &str) -> String {
    dir().join(format!("{name}.json")).display().to_string()
}

/// Every captured server's name (its file's), sorted; the query sets are not servers.
pub fn servers() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("tests/fixtures/catalogue")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".json")?;
            (!stem.starts_with("queries")).then(|| stem.to_owned())
        })
        .collect();
    names.sort();
    names
}

/// Every captured definition as sent, with its server's name, server by server.
pub fn raw() -> Vec<(String, Value)> {
    let mut tools = Vec::new();
    for name in servers() {
        let text = std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let server = v["server"].as_str().unwrap().to_owned();
        for t in v["tools"].as_array().unwrap() {
            tools.push((server.clone(), t.clone()));
        }
    }
    tools
}

/// A captured (or listed) tool, as a host's tool object shows it.
pub struct Captured {
    pub name: String,
    pub server: String,
    pub definition: Tool,
}

impl AgentTool for Captured {
    fn name(&self) -> &str {
        &self.name
    }
    fn label(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        self.definition.description.as_deref().unwrap_or("")
    }
    fn parameters(&self) -> &Value {
        &self.definition.input_schema
    }
    fn execute(&self, _: Value, _: CallOptions<'_>) -> Result<ToolOutput, Error> {
        Err(Error::Cancelled)
    }
    fn mcp_identity(&self) -> Option<(&str, &str)> {
        Some((&self.server, &self.definition.name))
    }
    fn mcp_definition(&self) -> Option<&Tool> {
        Some(&self.definition)
    }
}

/// Tool objects for `definitions` (server, definition), named as the manager names them.
pub fn named(definitions: Vec<(String, Tool)>) -> Vec<Arc<Captured>> {
    let identities: Vec<(&str, &str)> = definitions
        .iter()
        .map(|(s, t)| (s.as_str(), t.name.as_str()))
        .collect();
    let names = exposed_names(&identities);
    definitions
        .into_iter()
        .zip(names)
        .map(|((server, definition), name)| {
            Arc::new(Captured {
                name,
                server,
                definition,
            })
        })
        .collect()
}

/// Every captured tool, with its exposed name.
pub fn tools() -> Vec<Arc<Captured>> {
    named(
        raw()
            .into_iter()
            .map(|(server, t)| (server, serde_json::from_value(t).unwrap()))
            .collect(),
    )
}
