//! Which servers get an [`OAuthProvider`], and how it is built from a server's config.
//!
//! Every HTTP or SSE server does, unless its config already sends an `Authorization` header
//! (a static token, Codex's `bearer_token_env_var`): most hosted servers answer `401` until the
//! client runs the MCP authorization flow, and users do not write an `oauth` object for them.
//! The server's `oauth` object, when there is one, gives pre-registered credentials, scopes, a
//! callback port or a grant; without one the client registers itself where the server allows
//! it. Nothing happens on the network until the server answers `401`; then the provider
//! refreshes a stored token, or (with an interactive [`Authorizer`]) logs in.
//!
//! Without the `oauth` feature there is no provider: [`uses_oauth`] still says which servers
//! would have one (the manager tells a login they ask for from a refusal of their own token).

#[cfg(feature = "oauth")]
use std::path::PathBuf;
#[cfg(feature = "oauth")]
use std::sync::Arc;

#[cfg(feature = "oauth")]
use serde_json::Value;

#[cfg(feature = "oauth")]
use super::resolve::resolve_secret;
use super::server::{ServerConfig, TransportType};
#[cfg(feature = "oauth")]
use crate::auth::{AuthStorage, Authorizer, OAuthConfig, OAuthOptions, OAuthProvider};
#[cfg(feature = "oauth")]
use crate::error::Error;

/// The keys of an `oauth` object whose values are secrets, resolved at connect time.
#[cfg(feature = "oauth")]
const SECRET_KEYS: [&str; 2] = ["clientSecret", "workloadToken"];
/// The same, inside its `enterprise` object.
#[cfg(feature = "oauth")]
const ENTERPRISE_SECRET_KEYS: [&str; 2] = ["idToken", "idpClientSecret"];

/// Whether `config` is a server OAuth applies to: HTTP or SSE, with no `Authorization` of its
/// own.
pub fn uses_oauth(config: &ServerConfig) -> bool {
    let remote = matches!(
        config.transport_kind(),
        Ok(TransportType::Http | TransportType::Sse)
    );
    let own_authorization = config
        .headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
        || config.bearer_token_env_var.is_some()
        || config.auth.is_some();
    remote && !own_authorization && config.url.is_some()
}

/// The provider of `config`'s server, or `None` where OAuth does not apply (see
/// [`uses_oauth`]). Secret values of its `oauth` object are resolved here.
#[cfg(feature = "oauth")]
pub fn provider_for(
    config: &ServerConfig,
    storage: Arc<dyn AuthStorage>,
    authorizer: Arc<dyn Authorizer>,
    options: OAuthOptions,
) -> Result<Option<OAuthProvider>, Error> {
    if !uses_oauth(config) {
        return Ok(None);
    }
    let Some(url) = config.url.as_deref() else {
        return Ok(None);
    };
    let mut oauth = config
        .oauth
        .clone()
        .unwrap_or_else(|| Value::Object(Default::default()));
    resolve_keys(&mut oauth, &SECRET_KEYS);
    if let Some(enterprise) = oauth.get_mut("enterprise") {
        resolve_keys(enterprise, &ENTERPRISE_SECRET_KEYS);
    }
    let oauth = OAuthConfig::from_value(&oauth)?;
    // The server's OAuth requests go through its own proxy, trust its CA and show its client
    // certificate, as its MCP requests do (a relative path is the project's: the working
    // directory's, unless the options name the files already).
    let here = std::path::Path::new("");
    let file =
        |own: Option<PathBuf>, value: &Option<String>| own.or_else(|| config.file(value, here));
    let options = OAuthOptions {
        proxy: options.proxy.or_else(|| config.proxy.clone()),
        ca_file: file(options.ca_file, &config.ca_file),
        client_cert: file(options.client_cert, &config.client_cert),
        client_key: file(options.client_key, &config.client_key),
        ..options
    };
    OAuthProvider::with_config(url, oauth, storage, authorizer, options).map(Some)
}

#[cfg(feature = "oauth")]
fn resolve_keys(object: &mut Value, keys: &[&str]) {
    for key in keys {
        if let Some(Value::String(raw)) = object.get(*key) {
            match resolve_secret(raw) {
                Some(value) => object[*key] = Value::String(value),
                None => {
                    log::warn!("oauth {key}: its value could not be resolved; left out");
                    if let Some(map) = object.as_object_mut() {
                        map.remove(*key);
                    }
                }
            }
        }
    }
}
