//! OAuth for the manager's HTTP servers in a build without the `oauth` feature: there is none.
//! A server OAuth would apply to (see [`uses_oauth`]) gets a provider that sends nothing and,
//! when the server answers `401` with a `WWW-Authenticate` challenge (it wants a login), fails
//! the request with [`Error::FeatureMissing`] instead of the bare `401`. A server whose config
//! sends its own `Authorization` (a static header, a bearer token, a stored credential) is
//! connected as in the full build; one whose config has an `oauth` object is refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::Shared;
use crate::client::Endpoint;
use crate::config::{uses_oauth, ServerConfig};
use crate::error::Error;
use crate::net::url::redact;
use crate::transport::AuthProvider;

/// The provider in OAuth's place: no token, and a typed refusal of a login.
struct NoOAuth {
    /// The server's URL, redacted.
    shown: String,
    /// The last `401` carried a challenge.
    challenged: AtomicBool,
}

impl AuthProvider for NoOAuth {
    fn authorization(&self) -> Option<String> {
        None
    }

    fn on_unauthorized(&self, www_authenticate: Option<&str>, _retries: u32) -> bool {
        self.challenged
            .store(www_authenticate.is_some(), Ordering::SeqCst);
        false
    }

    fn refusal(&self) -> Option<Error> {
        self.challenged.load(Ordering::SeqCst).then(|| {
            Error::feature_missing(
                "oauth",
                format!(
                    "the OAuth login {} asks for (HTTP 401 with WWW-Authenticate)",
                    self.shown
                ),
            )
        })
    }
}

impl Shared {
    /// Gives `endpoint` the provider that refuses a login, where OAuth would apply.
    pub(crate) fn attach_oauth(
        &self,
        config: &ServerConfig,
        endpoint: &mut Endpoint,
    ) -> Result<(), Error> {
        if !uses_oauth(config) {
            return Ok(());
        }
        let shown = redact(config.url.as_deref().unwrap_or(""));
        if config.oauth.is_some() {
            return Err(Error::feature_missing(
                "oauth",
                format!("the `oauth` object in the config of {shown}"),
            ));
        }
        if let Endpoint::Http(target) | Endpoint::Sse(target) | Endpoint::Url(target) = endpoint {
            target.auth = Some(Arc::new(NoOAuth {
                shown,
                challenged: AtomicBool::new(false),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_refused_with_the_feature_named() {
        let provider = NoOAuth {
            shown: "http://127.0.0.1:9/mcp".into(),
            challenged: AtomicBool::new(false),
        };
        assert_eq!(provider.authorization(), None);
        assert!(!provider.on_unauthorized(None, 0));
        assert_eq!(provider.refusal(), None, "a bare 401 stays the server's");
        assert!(!provider.on_unauthorized(Some("Bearer resource_metadata=\"x\""), 0));
        let e = provider.refusal().unwrap();
        assert!(
            matches!(
                e,
                Error::FeatureMissing {
                    feature: "oauth",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("\"oauth\" feature"), "{e}");
    }
}
