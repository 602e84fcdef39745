//! A tool with a name, a description and parameters and nothing behind it, for the unit tests
//! of what holds tools (the index, the registry).

use std::sync::Arc;

use serde_json::Value;

use super::{AgentTool, ToolOutput};
use crate::client::CallOptions;
use crate::error::Error;

struct Fake {
    name: String,
    description: String,
    parameters: Value,
}

impl AgentTool for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn label(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> &Value {
        &self.parameters
    }
    fn execute(&self, _: Value, _: CallOptions<'_>) -> Result<ToolOutput, Error> {
        Ok(ToolOutput::text(""))
    }
}

/// A tool with nothing behind it.
pub(crate) fn tool(name: &str, description: &str, parameters: Value) -> Arc<dyn AgentTool> {
    Arc::new(Fake {
        name: name.into(),
        description: description.into(),
        parameters,
    })
}
