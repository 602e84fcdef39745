//! Turning the manager's tool set into tool objects with their exposed names.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{AgentTool, McpTool, Spec};
use crate::manager::naming::exposed_names;
use crate::manager::McpManager;

/// The tool objects for the manager's current tools: an MCP tool for each tool, deferred
/// ([`AgentTool::is_deferred`]) for each tool of a server still connecting. Names are computed over the
/// whole set (so collisions resolve the same way every time), sorted by name.
pub fn build_tools(manager: &McpManager) -> Vec<Arc<dyn AgentTool>> {
    build_tools_numbered(manager).1
}

/// [`build_tools`] from a numbered snapshot (see `McpManager::get_tools_numbered`).
pub(crate) fn build_tools_numbered(manager: &McpManager) -> (u64, Vec<Arc<dyn AgentTool>>) {
    let (number, managed) = manager.get_tools_numbered();
    let identities: Vec<(&str, &str)> = managed
        .iter()
        .map(|m| (m.server.as_str(), m.tool.name.as_str()))
        .collect();
    let names = exposed_names(&identities);
    let connect_timeout = manager.options().connect.timeout;
    let mut tools: Vec<(String, Arc<dyn AgentTool>)> = managed
        .into_iter()
        .zip(names)
        .map(|(m, name)| {
            let spec = Spec {
                label: format!("{}/{}", m.server, m.tool.name),
                description: m
                    .tool
                    .description
                    .clone()
                    .filter(|d| !d.trim().is_empty())
                    .unwrap_or_else(|| format!("MCP tool from {}", m.server)),
                parameters: adjusted_parameters(&m.tool.input_schema),
                name: name.clone(),
                server: m.server.clone(),
                definition: m.tool,
                source: m.source,
            };
            let wait = m.deferred.then(|| {
                manager
                    .config(&spec.server)
                    .map_or(connect_timeout, |c| c.connect_bound(connect_timeout))
            });
            let tool: Arc<dyn AgentTool> = Arc::new(McpTool {
                spec,
                manager: manager.clone(),
                wait,
            });
            (name, tool)
        })
        .collect();
    tools.sort_by(|a, b| a.0.cmp(&b.0));
    (number, tools.into_iter().map(|(_, t)| t).collect())
}

/// The parameters schema shown to the model: the server's `inputSchema`, where an object schema
/// without `properties` gets an empty one (and a missing schema is an empty object schema).
pub fn parameters_of(input_schema: &Value) -> Value {
    adjusted_parameters(input_schema).unwrap_or_else(|| input_schema.clone())
}

/// [`parameters_of`], or `None` where that is the schema unchanged (the common case), so the
/// definition's schema can be shown without a copy.
fn adjusted_parameters(input_schema: &Value) -> Option<Value> {
    match input_schema {
        Value::Object(map) => {
            let is_object = map.get("type").is_none_or(|t| t == "object");
            if !is_object || map.contains_key("properties") {
                return None;
            }
            let mut map = map.clone();
            map.insert("properties".into(), json!({}));
            Some(Value::Object(map))
        }
        _ => Some(json!({"type": "object", "properties": {}})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_schemas_get_properties() {
        assert_eq!(
            parameters_of(&json!({"type": "object"})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            parameters_of(&Value::Null),
            json!({"type": "object", "properties": {}})
        );
        let full =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(parameters_of(&full), full);
        let other = json!({"type": "string"});
        assert_eq!(parameters_of(&other), other);
    }
}
