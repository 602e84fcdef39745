//! [`ToolRegistry`]: the host's own tools and the MCP tools, by name, with the active set.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::loader::LoadedTool;
use crate::tool::AgentTool;

/// The host's tools and the MCP tools, by name, with the set that is active.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, LoadedTool>,
    active: BTreeSet<String>,
    /// The names of the MCP tools (refreshes replace exactly these).
    mcp: BTreeSet<String>,
}

impl ToolRegistry {
    /// Registers one of the host's own tools (active).
    pub fn add_host_tool(&mut self, tool: Arc<dyn AgentTool>, path: impl Into<String>) {
        let name = tool.name().to_owned();
        self.mcp.remove(&name);
        self.tools.insert(
            name.clone(),
            LoadedTool {
                tool,
                label: path.into(),
                config_file: String::new(),
            },
        );
        self.active.insert(name);
    }

    /// Takes one of the host's own tools out (an MCP tool is never taken out this way). False
    /// when there was no such host tool.
    pub fn remove_host_tool(&mut self, name: &str) -> bool {
        if self.mcp.contains(name) || self.tools.remove(name).is_none() {
            return false;
        }
        self.active.remove(name);
        true
    }

    /// Makes a tool (in)active. False when there is no such tool.
    pub fn set_active(&mut self, name: &str, active: bool) -> bool {
        if !self.tools.contains_key(name) {
            return false;
        }
        if active {
            self.active.insert(name.to_owned());
        } else {
            self.active.remove(name);
        }
        true
    }

    /// Removes every MCP tool, registers `tools`, and activates them. The host's own tools
    /// and their active state stay as they are (a host tool keeps its name against an MCP tool
    /// that would take it).
    pub fn replace_mcp_tools(&mut self, tools: Vec<LoadedTool>) {
        for name in std::mem::take(&mut self.mcp) {
            self.tools.remove(&name);
            self.active.remove(&name);
        }
        for t in tools {
            let name = t.tool.name().to_owned();
            if self.tools.contains_key(&name) {
                log::warn!("MCP tool {name} is shadowed by a host tool of the same name");
                continue;
            }
            self.tools.insert(name.clone(), t);
            self.mcp.insert(name.clone());
            self.active.insert(name);
        }
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.get(name)
    }

    /// Every tool, by name.
    pub fn all(&self) -> Vec<LoadedTool> {
        self.tools.values().cloned().collect()
    }

    /// The active tools, by name.
    pub fn active(&self) -> Vec<LoadedTool> {
        self.active
            .iter()
            .filter_map(|n| self.tools.get(n))
            .cloned()
            .collect()
    }

    /// Whether a tool is active.
    pub fn is_active(&self, name: &str) -> bool {
        self.active.contains(name)
    }

    /// Whether `name` is an MCP tool's.
    pub fn is_mcp_tool(&self, name: &str) -> bool {
        self.mcp.contains(name)
    }

    /// The names of the MCP tools.
    pub fn mcp_tool_names(&self) -> Vec<String> {
        self.mcp.iter().cloned().collect()
    }
}
