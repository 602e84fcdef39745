//! Exa servers: hosts with a native Exa integration drop them and take their API keys instead.
//!
//! A server is Exa's when its name is `exa` (any case), its URL is on `mcp.exa.ai`, or one of
//! its arguments mentions `mcp.exa.ai`. Its key is the first `exaApiKey=<value>` in the URL or
//! an argument, else its `EXA_API_KEY` env value.

use super::server::ServerConfig;

const HOST: &str = "mcp.exa.ai";

/// Whether the server is an Exa server.
pub fn is_exa(name: &str, config: &ServerConfig) -> bool {
    name.eq_ignore_ascii_case("exa")
        || config
            .url
            .as_deref()
            .is_some_and(|u| u.to_ascii_lowercase().contains(HOST))
        || config
            .args
            .iter()
            .any(|a| a.to_ascii_lowercase().contains(HOST))
}

/// The Exa API key the server's config carries, if any.
pub fn exa_api_key(config: &ServerConfig) -> Option<String> {
    let from_text = |text: &str| {
        let at = text.find("exaApiKey=")?;
        let value: String = text[at + "exaApiKey=".len()..]
            .chars()
            .take_while(|c| *c != '&' && !c.is_whitespace())
            .collect();
        (!value.is_empty()).then_some(value)
    };
    config
        .url
        .as_deref()
        .and_then(from_text)
        .or_else(|| config.args.iter().find_map(|a| from_text(a)))
        .or_else(|| {
            config
                .env
                .get("EXA_API_KEY")
                .filter(|v| !v.is_empty())
                .cloned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: serde_json::Value) -> ServerConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn recognises_exa_and_finds_its_key() {
        let url = cfg(json!({"url": "https://MCP.exa.ai/mcp?exaApiKey=k1&x=2"}));
        assert!(is_exa("search", &url));
        assert_eq!(exa_api_key(&url).as_deref(), Some("k1"));
        let args = cfg(
            json!({"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.exa.ai/mcp?exaApiKey=k2"]}),
        );
        assert!(is_exa("web", &args));
        assert_eq!(exa_api_key(&args).as_deref(), Some("k2"));
        let env = cfg(json!({"command": "exa-mcp-server", "env": {"EXA_API_KEY": "k3"}}));
        assert!(is_exa("EXA", &env));
        assert_eq!(exa_api_key(&env).as_deref(), Some("k3"));
        assert!(!is_exa("files", &cfg(json!({"command": "x"}))));
    }
}
