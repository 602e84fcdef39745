//! Extensions (SEP-2133): what each side declared in `capabilities.extensions` (the client in
//! `initialize`, or in every request's `_meta` in the stateless era; the server in its
//! `initialize` result or `server/discover`), and what was agreed: an extension is on only when
//! both declared it. Settings are kept as sent, so an extension this crate does not know
//! passes through untouched.

use serde::Serialize;
use serde_json::Value;

use super::Client;

/// One extension, as the two sides declared it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Extension {
    /// Its name (`io.modelcontextprotocol/ui`, ...).
    pub name: String,
    /// The settings the client declared, when it declared it.
    pub client: Option<Value>,
    /// The settings the server declared, when it declared it.
    pub server: Option<Value>,
}

impl Extension {
    /// Whether both sides declared it: only then is it on.
    pub fn agreed(&self) -> bool {
        self.client.is_some() && self.server.is_some()
    }
}

impl Client {
    /// The settings the server declared for extension `name`, when it declared it.
    pub fn server_extension(&self, name: &str) -> Option<Value> {
        self.initialize_result()
            .capabilities
            .extra
            .get("extensions")
            .and_then(|e| e.get(name))
            .cloned()
    }

    /// The server's settings for extension `name` when both sides declared it (it is on).
    pub fn agreed_extension(&self, name: &str) -> Option<Value> {
        self.declared_extensions().get(name)?;
        self.server_extension(name)
    }

    /// Every extension either side declared, by name.
    pub fn extensions(&self) -> Vec<Extension> {
        let ours = self.declared_extensions();
        let theirs = self
            .initialize_result()
            .capabilities
            .extra
            .get("extensions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<&String> = ours.keys().chain(theirs.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| Extension {
                name: name.clone(),
                client: ours.get(name).cloned(),
                server: theirs.get(name).cloned(),
            })
            .collect()
    }

    fn declared_extensions(&self) -> serde_json::Map<String, Value> {
        self.inner
            .conn
            .router
            .declared()
            .extra
            .get("extensions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}
