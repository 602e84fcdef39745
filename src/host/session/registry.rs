//! [`ToolRegistry`]: the host's own tools and the MCP tools, by name, with the active set.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::tool::AgentTool;

/// The host's tools and the MCP tools, by name, with the set that is active.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn AgentTool>>,
    active: BTreeSet<String>,
    /// The names of the MCP tools (refreshes replace exactly these).
    mcp: BTreeSet<String>,
    /// The number of the manager's snapshot the MCP tools came from (0: none, or the host's
    /// own list): an older snapshot never replaces them.
    snapshot: u64,
}

impl ToolRegistry {
    /// Registers one of the host's own tools (active).
    pub fn add_host_tool(&mut self, tool: Arc<dyn AgentTool>) {
        let name = tool.name().to_owned();
        self.mcp.remove(&name);
        self.tools.insert(name.clone(), tool);
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
    pub fn replace_mcp_tools(&mut self, tools: Vec<Arc<dyn AgentTool>>) {
        self.snapshot = 0;
        self.put_mcp_tools(tools);
    }

    /// [`ToolRegistry::replace_mcp_tools`] with the manager's snapshot numbered `number`,
    /// unless the tools came from a later one already (two refreshes that overlap apply in any
    /// order; the newer snapshot wins). Whether it was applied.
    pub(crate) fn replace_mcp_tools_from(
        &mut self,
        number: u64,
        tools: Vec<Arc<dyn AgentTool>>,
    ) -> bool {
        if number <= self.snapshot {
            return false;
        }
        self.snapshot = number;
        self.put_mcp_tools(tools);
        true
    }

    fn put_mcp_tools(&mut self, tools: Vec<Arc<dyn AgentTool>>) {
        for name in std::mem::take(&mut self.mcp) {
            self.tools.remove(&name);
            self.active.remove(&name);
        }
        for t in tools {
            let name = t.name().to_owned();
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
    pub fn get(&self, name: &str) -> Option<&Arc<dyn AgentTool>> {
        self.tools.get(name)
    }

    /// Every tool, by name.
    pub fn all(&self) -> Vec<Arc<dyn AgentTool>> {
        self.tools.values().cloned().collect()
    }

    /// The active tools, by name.
    pub fn active(&self) -> Vec<Arc<dyn AgentTool>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::test_tools::tool;
    use serde_json::json;

    fn loaded(names: &[&str]) -> Vec<Arc<dyn AgentTool>> {
        names.iter().map(|n| tool(n, "", json!({}))).collect()
    }

    fn names(r: &ToolRegistry) -> Vec<String> {
        r.tools.keys().cloned().collect()
    }

    #[test]
    fn an_older_snapshot_never_replaces_a_newer_one() {
        let mut r = ToolRegistry::default();
        // Two refreshes overlap: the later snapshot (7) is applied first.
        assert!(r.replace_mcp_tools_from(7, loaded(&["mcp_a_new"])));
        assert!(!r.replace_mcp_tools_from(5, loaded(&["mcp_a_old"])));
        assert_eq!(names(&r), ["mcp_a_new"]);
        assert!(!r.replace_mcp_tools_from(7, loaded(&["mcp_a_same"])));
        assert!(r.replace_mcp_tools_from(8, loaded(&["mcp_a_newer"])));
        assert_eq!(names(&r), ["mcp_a_newer"]);
        // The host's own list has no number: what comes after it applies.
        r.replace_mcp_tools(loaded(&["mcp_host_list"]));
        assert!(r.replace_mcp_tools_from(2, loaded(&["mcp_b"])));
        assert_eq!(names(&r), ["mcp_b"]);
    }
}
