//! OAuth for the manager's HTTP servers: each connection gets its server's
//! [`OAuthProvider`](crate::auth::OAuthProvider), which refreshes stored tokens by
//! itself but never asks the user (a background connect that needs a login fails, and its
//! status says `needs login`); [`McpManager::login`] runs the interactive step with the host's
//! [`Authorizer`] and reconnects the server; [`McpManager::logout`] forgets its tokens.
//!
//! The flow runs on the calling thread (or the connect task's), never under the state lock.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{McpManager, Shared};
use crate::auth::{no_login, AuthStatus, AuthStorage, Authorizer, OAuthOptions, OAuthProvider};
use crate::client::Endpoint;
use crate::config::oauth::provider_for;
use crate::config::{FileAuthStorage, ServerConfig};
use crate::error::Error;

impl Shared {
    /// Where OAuth tokens are kept: the host's storage, else the user's own auth file.
    fn auth_storage(&self) -> Arc<dyn AuthStorage> {
        self.options
            .auth
            .clone()
            .unwrap_or_else(|| Arc::new(FileAuthStorage::user_default()))
    }

    /// The provider of a server, with `authorizer` for its interactive step.
    fn oauth_provider(
        &self,
        config: &ServerConfig,
        authorizer: Arc<dyn Authorizer>,
    ) -> Result<Option<OAuthProvider>, Error> {
        let http = &self.options.connect.http;
        let options = OAuthOptions {
            default_proxy: http.proxy.clone(),
            default_ca_file: http.ca_file.clone(),
            // The files a relative path names are the project's, as for the MCP connection.
            ca_file: config.file(&config.ca_file, &self.options.project_dir),
            client_cert: config.file(&config.client_cert, &self.options.project_dir),
            client_key: config.file(&config.client_key, &self.options.project_dir),
            ..OAuthOptions::default()
        };
        provider_for(config, self.auth_storage(), authorizer, options)
    }

    /// Gives `endpoint` its server's OAuth provider (one that never asks the user), where
    /// OAuth applies.
    pub(crate) fn attach_oauth(
        &self,
        config: &ServerConfig,
        endpoint: &mut Endpoint,
    ) -> Result<(), Error> {
        let provider = match self.oauth_provider(config, no_login()) {
            Ok(Some(provider)) => provider,
            Ok(None) => return Ok(()),
            // An `oauth` object the user wrote must be right; without one, a server OAuth
            // cannot serve (plain http to another machine, say) is connected without it.
            Err(e) if config.oauth.is_some() => return Err(e),
            Err(e) => {
                log::debug!("no OAuth for this server: {e}");
                return Ok(());
            }
        };
        if let Endpoint::Http(target) | Endpoint::Sse(target) | Endpoint::Url(target) = endpoint {
            target.auth = Some(Arc::new(provider));
        }
        Ok(())
    }
}

impl McpManager {
    /// Logs in to `name`'s server with `authorizer` (the browser and a loopback listener, a
    /// headless one, or the host's own), stores the tokens, and reconnects the server.
    ///
    /// A server still connecting is waited for first (bounded by its connect timeout): one
    /// that connected without any stored login never asked for authorization, and logging in
    /// to it is an [`Error::Config`] saying so (nothing is registered or stored).
    ///
    /// ```no_run
    /// # let manager = mcp_runtime::McpManager::new(Default::default());
    /// if manager.connection_status("linear").needs_login() {
    ///     // Opens the system browser; the answer comes back on 127.0.0.1.
    ///     manager.login("linear", mcp_runtime::auth::browser())?;
    /// }
    /// # Ok::<(), mcp_runtime::Error>(())
    /// ```
    pub fn login(&self, name: &str, authorizer: Arc<dyn Authorizer>) -> Result<(), Error> {
        let config = self
            .shared
            .config_of(name)
            .ok_or_else(|| Error::not_connected(name))?;
        let provider = self
            .shared
            .oauth_provider(&config, authorizer)?
            .ok_or_else(|| Error::Config {
                message: format!("server {name:?} does not use OAuth (not HTTP, or it sends its own Authorization)"),
            })?;
        let bound = config.connect_bound(self.shared.options.connect.timeout);
        let _ = self.wait_for_connection(name, bound, None);
        let status = self.connection_status(name);
        if status.is_connected() && !provider.status().logged_in {
            return Err(Error::Config {
                message: format!(
                    "MCP server {name:?} answered without asking for authorization: it needs \
                     no login"
                ),
            });
        }
        // The server's own challenge, if its last attempt was refused, says where to log in.
        let challenge = match status.error() {
            Some(Error::Http {
                www_authenticate, ..
            }) => www_authenticate.clone(),
            _ => None,
        };
        provider.login(challenge.as_deref())?;
        let source = self.source(name);
        self.disconnect_server(name);
        let configs = BTreeMap::from([(name.to_owned(), config)]);
        let sources: BTreeMap<_, _> = source.map(|s| (name.to_owned(), s)).into_iter().collect();
        let report = self.connect_with(&configs, &sources);
        match report.errors.get(name) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Forgets the OAuth tokens of `name`'s server.
    pub fn logout(&self, name: &str) -> Result<(), Error> {
        let config = self
            .shared
            .config_of(name)
            .ok_or_else(|| Error::not_connected(name))?;
        match self.shared.oauth_provider(&config, no_login())? {
            Some(provider) => provider.logout(),
            None => Ok(()),
        }
    }

    /// What is stored for `name`'s server, where OAuth applies to it.
    pub fn auth_status(&self, name: &str) -> Option<AuthStatus> {
        let config = self.shared.config_of(name)?;
        let provider = self.shared.oauth_provider(&config, no_login()).ok()??;
        Some(provider.status())
    }
}
