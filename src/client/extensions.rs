//! Extensions (SEP-2133): what each side declared in `capabilities.extensions` (the client in
//! `initialize`, or in every request's `_meta` in the stateless era; the server in its
//! `initialize` result or `server/discover`), and what was agreed: an extension is on only when
//! both declared it. Settings are kept as sent, so an extension this crate does not know
//! passes through untouched.

use serde_json::Value;

use super::Client;

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

    /// The settings this client declared for extension `name`, when it declared it.
    pub fn client_extension(&self, name: &str) -> Option<Value> {
        self.declared_extensions().get(name).cloned()
    }

    /// The name of every extension either side declared, in order: for each, the client's
    /// settings ([`client_extension`](Client::client_extension)), the server's
    /// ([`server_extension`](Client::server_extension)), and whether both declared it, which
    /// alone turns it on ([`agreed_extension`](Client::agreed_extension)).
    pub fn extension_names(&self) -> Vec<String> {
        let ours = self.declared_extensions();
        let theirs = self
            .initialize_result()
            .capabilities
            .extra
            .get("extensions")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<String> = ours.keys().chain(theirs.keys()).cloned().collect();
        names.sort();
        names.dedup();
        names
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
