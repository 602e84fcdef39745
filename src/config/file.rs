//! Reading the `.mcp.json` file shape: `{"mcpServers": {"<name>": {...}}}`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::server::ServerConfig;
use crate::Error;

/// The servers of one `.mcp.json`-shaped file. A server entry that does not parse is reported
/// in `errors` and does not stop the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpJson {
    /// The servers that parsed, by name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// `(server name, error)` for each entry that did not.
    pub errors: Vec<(String, Error)>,
}

/// Reads a `.mcp.json`-shaped file.
pub fn read_mcp_json(path: &Path) -> Result<McpJson, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
        message: format!("{}: {e}", path.display()),
    })?;
    parse_mcp_json(&text).map_err(|e| match e {
        Error::Config { message } => Error::Config {
            message: format!("{}: {message}", path.display()),
        },
        other => other,
    })
}

/// Parses the text of a `.mcp.json`-shaped file.
pub fn parse_mcp_json(text: &str) -> Result<McpJson, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::Config {
        message: format!("malformed JSON: {e}"),
    })?;
    let servers = match value.get("mcpServers") {
        None | Some(Value::Null) => return Ok(McpJson::default()),
        Some(Value::Object(servers)) => servers,
        Some(_) => {
            return Err(Error::Config {
                message: "\"mcpServers\" must be an object".into(),
            })
        }
    };
    let mut out = McpJson::default();
    for (name, entry) in servers {
        match serde_json::from_value::<ServerConfig>(entry.clone()) {
            Ok(config) => {
                out.servers.insert(name.clone(), config);
            }
            Err(e) => out.errors.push((
                name.clone(),
                Error::Config {
                    message: format!("server \"{name}\": {e}"),
                },
            )),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_entry_does_not_hide_the_others() {
        let f = parse_mcp_json(
            r#"{"mcpServers": {"good": {"command": "a"}, "bad": {"args": "not a list"}}}"#,
        )
        .unwrap();
        assert_eq!(f.servers.len(), 1);
        assert_eq!(f.errors.len(), 1);
        assert_eq!(f.errors[0].0, "bad");
    }

    #[test]
    fn malformed_files_are_typed_errors() {
        assert!(matches!(
            parse_mcp_json("{not json"),
            Err(Error::Config { .. })
        ));
        assert!(matches!(
            parse_mcp_json(r#"{"mcpServers": []}"#),
            Err(Error::Config { .. })
        ));
        assert_eq!(parse_mcp_json("{}").unwrap(), McpJson::default());
        let missing = read_mcp_json(Path::new("/nonexistent/.mcp.json")).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/.mcp.json"));
    }
}
