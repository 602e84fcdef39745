//! The `oauth` object of an HTTP server's config:
//!
//! ```json
//! "oauth": {
//!   "clientId": "…", "clientSecret": "…", "clientMetadataUrl": "https://…/client.json",
//!   "scopes": ["files:read"], "callbackPort": 8976,
//!   "grant": "authorization_code" | "client_credentials" | "enterprise" | "workload_identity",
//!   "privateKeyFile": "/path/key.pem", "signingAlgorithm": "ES256" | "RS256", "keyId": "…",
//!   "tokenEndpointAuthMethod": "client_secret_post",
//!   "enterprise": {"idpTokenEndpoint": "https://idp/token", "idToken": "…",
//!                  "idpClientId": "…", "idpClientSecret": "…"},
//!   "workloadTokenFile": "/var/run/secrets/tokens/mcp", "workloadToken": "…",
//!   "dpop": "auto" | "require" | "off"
//! }
//! ```
//!
//! Values arrive resolved (`${VAR}` and `!command` ran before); the secrets among them stay in
//! memory and never reach `Debug`.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::jwt::{SigningAlgorithm, SigningKey};
use super::token::AuthMethod;
use super::{error, OAuthErrorKind, Secret};
use crate::error::Error;

/// Which grant obtains the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Grant {
    /// The interactive authorization code flow with PKCE (the default).
    #[default]
    AuthorizationCode,
    /// `client_credentials`, for machine clients (a secret or a signed JWT assertion).
    ClientCredentials,
    /// Enterprise-managed authorization (SEP-990): an ID token from the enterprise IdP,
    /// exchanged for an ID-JAG, presented to the server's AS as a JWT bearer grant.
    Enterprise,
    /// Workload identity federation (SEP-1933, `io.modelcontextprotocol/auth/wif`): a JWT the
    /// platform issued the workload (a Kubernetes service account token, a cloud's identity
    /// token), presented to the server's AS as an RFC 7523 JWT bearer grant. No user, no
    /// interactive fallback.
    WorkloadIdentity,
}

/// The SEP-990 inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnterpriseConfig {
    /// The IdP's token endpoint (where the ID token is exchanged).
    pub(crate) idp_token_endpoint: String,
    /// The user's ID token from the IdP (usually from a `!command`).
    pub(crate) id_token: Secret,
    /// The client id at the IdP.
    pub(crate) idp_client_id: String,
    /// The client secret at the IdP, if any.
    pub(crate) idp_client_secret: Option<Secret>,
}

/// The `oauth` object of an HTTP server. `Debug` hides the secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OAuthConfig {
    /// `clientId`: a pre-registered client.
    pub(crate) client_id: Option<String>,
    /// `clientSecret`.
    pub(crate) client_secret: Option<Secret>,
    /// `clientMetadataUrl`: the host's Client ID Metadata Document.
    pub(crate) client_metadata_url: Option<String>,
    /// `scopes`: requested when the server's challenge names none.
    pub(crate) scopes: Option<Vec<String>>,
    /// `callbackPort`: the loopback redirect's port (else any free one).
    pub(crate) callback_port: Option<u16>,
    /// `grant`.
    pub(crate) grant: Grant,
    /// `privateKeyFile`: a PKCS#8 (PEM or DER) key for `private_key_jwt`.
    pub(crate) private_key_file: Option<PathBuf>,
    /// `signingAlgorithm` (default ES256).
    pub(crate) signing_algorithm: SigningAlgorithm,
    /// `keyId`: the `kid` of assertions.
    pub(crate) key_id: Option<String>,
    /// `tokenEndpointAuthMethod`: overrides the choice from the AS's metadata.
    pub(crate) token_endpoint_auth_method: Option<AuthMethod>,
    /// `enterprise`: the SEP-990 inputs.
    pub(crate) enterprise: Option<EnterpriseConfig>,
    /// `workloadTokenFile`: where the platform keeps the workload's JWT (read again for every
    /// token request: platforms rotate it).
    pub(crate) workload_token_file: Option<PathBuf>,
    /// `workloadToken`: the workload's JWT itself (resolved like `clientSecret`: an
    /// environment variable's name, or a `!command`).
    pub(crate) workload_token: Option<Secret>,
    /// `dpop`: when tokens are bound to a key (see `dpop`).
    pub(crate) dpop: super::dpop::DpopMode,
}

fn bad(what: &str) -> Error {
    error(OAuthErrorKind::Config, format!("oauth.{what}"))
}

fn string(m: &Map<String, Value>, key: &str) -> Result<Option<String>, Error> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(&format!("{key} must be a string"))),
    }
}

impl OAuthConfig {
    /// Parses the `oauth` object.
    pub(crate) fn from_value(value: &Value) -> Result<OAuthConfig, Error> {
        let m = value.as_object().ok_or_else(|| bad(" must be an object"))?;
        let scopes = match m.get("scopes").or_else(|| m.get("scope")) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.split_whitespace().map(str::to_owned).collect()),
            Some(Value::Array(a)) => Some(
                a.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("scopes must be strings"))?,
            ),
            Some(_) => return Err(bad("scopes must be a list of strings")),
        };
        let callback_port = match m.get("callbackPort") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(
                n.as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .ok_or_else(|| bad("callbackPort must be a port number"))?,
            ),
            Some(Value::String(s)) => Some(
                s.trim()
                    .parse()
                    .map_err(|_| bad("callbackPort must be a port number"))?,
            ),
            Some(_) => return Err(bad("callbackPort must be a port number")),
        };
        let enterprise = match m.get("enterprise") {
            None | Some(Value::Null) => None,
            Some(Value::Object(e)) => Some(EnterpriseConfig {
                idp_token_endpoint: string(e, "idpTokenEndpoint")?
                    .ok_or_else(|| bad("enterprise.idpTokenEndpoint is required"))?,
                id_token: Secret::new(
                    string(e, "idToken")?.ok_or_else(|| bad("enterprise.idToken is required"))?,
                ),
                idp_client_id: string(e, "idpClientId")?
                    .ok_or_else(|| bad("enterprise.idpClientId is required"))?,
                idp_client_secret: string(e, "idpClientSecret")?.map(Secret::new),
            }),
            Some(_) => return Err(bad("enterprise must be an object")),
        };
        let grant = match string(m, "grant")?.as_deref() {
            None if enterprise.is_some() => Grant::Enterprise,
            None | Some("authorization_code") => Grant::AuthorizationCode,
            Some("client_credentials") => Grant::ClientCredentials,
            Some("enterprise") | Some(super::token::JWT_BEARER) => Grant::Enterprise,
            Some("workload_identity") | Some("wif") => Grant::WorkloadIdentity,
            Some(other) => {
                return Err(bad(&format!(
                "grant {other:?} is not one of authorization_code, client_credentials, enterprise, workload_identity"
            )))
            }
        };
        let workload_token_file = string(m, "workloadTokenFile")?.map(PathBuf::from);
        let workload_token = string(m, "workloadToken")?.map(Secret::new);
        if grant == Grant::WorkloadIdentity
            && workload_token_file.is_none()
            && workload_token.is_none()
        {
            return Err(bad(
                "workloadTokenFile (or workloadToken) is required for the workload_identity grant",
            ));
        }
        if grant == Grant::Enterprise && enterprise.is_none() {
            return Err(bad("enterprise is required for the enterprise grant"));
        }
        let signing_algorithm = match string(m, "signingAlgorithm")? {
            None => SigningAlgorithm::Es256,
            Some(a) => SigningAlgorithm::parse(&a)
                .ok_or_else(|| bad(&format!("signingAlgorithm {a:?} is not ES256 or RS256")))?,
        };
        let token_endpoint_auth_method = match string(m, "tokenEndpointAuthMethod")? {
            None => None,
            Some(a) => Some(AuthMethod::parse(&a).ok_or_else(|| {
                bad(&format!(
                    "tokenEndpointAuthMethod {a:?} is not a known method"
                ))
            })?),
        };
        let config = OAuthConfig {
            client_id: string(m, "clientId")?,
            client_secret: string(m, "clientSecret")?.map(Secret::new),
            client_metadata_url: string(m, "clientMetadataUrl")?,
            scopes,
            callback_port,
            grant,
            private_key_file: string(m, "privateKeyFile")?.map(PathBuf::from),
            signing_algorithm,
            key_id: string(m, "keyId")?,
            token_endpoint_auth_method,
            enterprise,
            workload_token_file,
            workload_token,
            dpop: match m.get("dpop") {
                None | Some(Value::Null) => super::dpop::DpopMode::Auto,
                Some(v) => super::dpop::DpopMode::parse(v)
                    .ok_or_else(|| bad("dpop must be \"auto\", \"require\" or \"off\""))?,
            },
        };
        if config.grant != Grant::AuthorizationCode && config.client_id.is_none() {
            return Err(bad(
                "clientId is required for the client_credentials, enterprise and workload_identity grants",
            ));
        }
        if let Some(url) = &config.client_metadata_url {
            super::endpoints::checked(url, "oauth.clientMetadataUrl")?;
        }
        Ok(config)
    }

    /// The workload's JWT for the `workload_identity` grant: `workloadTokenFile`'s content
    /// (read now: platforms rotate it) or `workloadToken`. `None` for other grants.
    pub(crate) fn workload_assertion(&self) -> Result<Option<Secret>, Error> {
        if self.grant != Grant::WorkloadIdentity {
            return Ok(None);
        }
        if let Some(path) = &self.workload_token_file {
            let text = std::fs::read_to_string(path).map_err(|e| {
                error(
                    OAuthErrorKind::Config,
                    format!(
                        "oauth.workloadTokenFile {} cannot be read: {e}",
                        path.display()
                    ),
                )
            })?;
            let token = text.trim();
            if token.is_empty() {
                return Err(error(
                    OAuthErrorKind::Config,
                    format!("oauth.workloadTokenFile {} is empty", path.display()),
                ));
            }
            return Ok(Some(Secret::new(token)));
        }
        match &self.workload_token {
            Some(t) if t.expose().trim().is_empty() => Err(error(
                OAuthErrorKind::Config,
                "oauth.workloadToken is empty",
            )),
            other => Ok(other.clone()),
        }
    }

    /// Loads `privateKeyFile`, when there is one.
    pub(crate) fn signing_key(&self) -> Result<Option<SigningKey>, Error> {
        let Some(path) = &self.private_key_file else {
            return Ok(None);
        };
        let key = SigningKey::from_file(path, self.signing_algorithm)?;
        Ok(Some(match &self.key_id {
            Some(kid) => key.with_key_id(kid.clone()),
            None => key,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_field() {
        let c = OAuthConfig::from_value(&json!({
            "clientId": "c", "clientSecret": "s3", "scopes": "a b", "callbackPort": "8976",
            "grant": "client_credentials", "signingAlgorithm": "rs256",
            "tokenEndpointAuthMethod": "client_secret_post"
        }))
        .unwrap();
        assert_eq!(c.scopes, Some(vec!["a".into(), "b".into()]));
        assert_eq!(c.callback_port, Some(8976));
        assert_eq!(c.grant, Grant::ClientCredentials);
        assert_eq!(c.signing_algorithm, SigningAlgorithm::Rs256);
        assert!(!format!("{c:?}").contains("s3"));
        let e = OAuthConfig::from_value(&json!({
            "clientId": "c",
            "enterprise": {"idpTokenEndpoint": "https://idp/t", "idToken": "eyJsecretvalue", "idpClientId": "i"}
        }))
        .unwrap();
        assert_eq!(e.grant, Grant::Enterprise);
        assert!(!format!("{e:?}").contains("eyJsecretvalue"));
        let w = OAuthConfig::from_value(&json!({
            "clientId": "w", "grant": "workload_identity", "workloadToken": "eyJworkloadjwt"
        }))
        .unwrap();
        assert_eq!(w.grant, Grant::WorkloadIdentity);
        assert!(!format!("{w:?}").contains("eyJworkloadjwt"));
        assert_eq!(
            w.workload_assertion().unwrap().unwrap().expose(),
            "eyJworkloadjwt"
        );
    }

    #[test]
    fn the_workload_token_file_is_read_at_each_request() {
        let path = std::env::temp_dir().join(format!("mcp-wif-{}.jwt", std::process::id()));
        let c = OAuthConfig::from_value(&json!({
            "clientId": "w", "grant": "wif", "workloadTokenFile": path
        }))
        .unwrap();
        let e = c.workload_assertion().unwrap_err().to_string();
        assert!(
            e.contains("workloadTokenFile") && e.contains("cannot be read"),
            "{e}"
        );
        std::fs::write(&path, "first\n").unwrap();
        assert_eq!(c.workload_assertion().unwrap().unwrap().expose(), "first");
        std::fs::write(&path, "rotated").unwrap();
        assert_eq!(c.workload_assertion().unwrap().unwrap().expose(), "rotated");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn clear_errors() {
        for bad in [
            json!({"grant": "password"}),
            json!({"grant": "client_credentials"}),
            json!({"clientId": "w", "grant": "workload_identity"}),
            json!({"callbackPort": 70000}),
            json!({"scopes": [1]}),
            json!({"clientMetadataUrl": "http://example.com/c.json"}),
            json!("x"),
        ] {
            let e = OAuthConfig::from_value(&bad).unwrap_err();
            assert!(e.to_string().starts_with("OAuth: oauth."), "{e}");
        }
    }
}
