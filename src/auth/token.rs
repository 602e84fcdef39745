//! The token endpoint: requests for every grant (authorization code, refresh, client
//! credentials, token exchange (RFC 8693), JWT bearer (RFC 7523)), client authentication
//! (`none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`), and responses.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use super::endpoints::encode;
use super::jwt::SigningKey;
use super::{error, OAuthErrorKind, Secret};
use crate::error::Error;
use crate::net::url::redact;

/// The RFC 8693 token exchange grant.
pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The RFC 7523 JWT bearer grant.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token type of an Identity Assertion JWT Authorization Grant (SEP-990).
pub(crate) const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token.
pub(crate) const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How the client authenticates to a token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// A public client: `client_id` in the form, nothing else.
    None,
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// A signed JWT client assertion.
    PrivateKeyJwt,
}

impl AuthMethod {
    /// The RFC 8414 name.
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Parses an RFC 8414 name.
    pub fn parse(name: &str) -> Option<AuthMethod> {
        [
            AuthMethod::None,
            AuthMethod::ClientSecretBasic,
            AuthMethod::ClientSecretPost,
            AuthMethod::PrivateKeyJwt,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }

    /// The method for a client with the given credentials at an AS advertising `supported`
    /// (absent: `client_secret_basic`, RFC 8414 §2). `preferred` (from the config or the
    /// registration) wins when the client has what it needs.
    pub(crate) fn choose(
        supported: Option<&[String]>,
        has_secret: bool,
        has_key: bool,
        preferred: Option<AuthMethod>,
    ) -> Result<AuthMethod, Error> {
        let usable = |m: AuthMethod| match m {
            AuthMethod::None => true,
            AuthMethod::ClientSecretBasic | AuthMethod::ClientSecretPost => has_secret,
            AuthMethod::PrivateKeyJwt => has_key,
        };
        if let Some(m) = preferred {
            if usable(m) {
                return Ok(m);
            }
            return Err(error(
                OAuthErrorKind::Config,
                format!(
                    "token endpoint auth method {} needs a {}",
                    m.name(),
                    if m == AuthMethod::PrivateKeyJwt {
                        "privateKeyFile"
                    } else {
                        "clientSecret"
                    }
                ),
            ));
        }
        if !has_secret && !has_key {
            return Ok(AuthMethod::None);
        }
        let default = ["client_secret_basic".to_owned()];
        let supported = supported.unwrap_or(&default);
        let order = [
            AuthMethod::PrivateKeyJwt,
            AuthMethod::ClientSecretBasic,
            AuthMethod::ClientSecretPost,
        ];
        order
            .into_iter()
            .find(|m| usable(*m) && supported.iter().any(|s| s == m.name()))
            .ok_or_else(|| {
                error(
                    OAuthErrorKind::Config,
                    format!(
                        "the authorization server accepts none of the client authentication methods configured (it lists {})",
                        supported.join(", ")
                    ),
                )
            })
    }
}

/// How a client authenticates one token request.
pub(crate) struct ClientAuth<'a> {
    pub client_id: &'a str,
    pub secret: Option<&'a Secret>,
    pub key: Option<&'a SigningKey>,
    pub method: AuthMethod,
    /// The authorization server's issuer (the `aud` of a client assertion).
    pub issuer: &'a str,
}

/// A request to a token endpoint, ready to send. `Debug` shows the endpoint and the parameter
/// names only.
#[derive(Clone)]
pub struct TokenRequest {
    /// The token endpoint.
    pub url: String,
    form: Vec<(String, String)>,
    basic: Option<String>,
    /// A DPoP proof goes with it (the flow decided; the driver makes it).
    pub(crate) dpop: bool,
}

impl std::fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.form.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("TokenRequest")
            .field("url", &redact(&self.url))
            .field("params", &names)
            .field("basic_auth", &self.basic.is_some())
            .field("dpop", &self.dpop)
            .finish()
    }
}

impl TokenRequest {
    /// A request of `grant` parameters, authenticated as `client`.
    pub(crate) fn new(
        url: &str,
        grant: Vec<(&str, String)>,
        client: &ClientAuth<'_>,
    ) -> Result<TokenRequest, Error> {
        let mut form: Vec<(String, String)> =
            grant.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let mut basic = None;
        let secret = || client.secret.map(Secret::expose).unwrap_or("");
        match client.method {
            AuthMethod::None => form.push(("client_id".into(), client.client_id.into())),
            AuthMethod::ClientSecretBasic => {
                let pair = format!("{}:{}", encode(client.client_id), encode(secret()));
                basic = Some(format!("Basic {}", STANDARD.encode(pair)));
            }
            AuthMethod::ClientSecretPost => {
                form.push(("client_id".into(), client.client_id.into()));
                form.push(("client_secret".into(), secret().into()));
            }
            AuthMethod::PrivateKeyJwt => {
                let key = client.key.ok_or_else(|| {
                    error(
                        OAuthErrorKind::Config,
                        "private_key_jwt needs a privateKeyFile",
                    )
                })?;
                form.push(("client_id".into(), client.client_id.into()));
                form.push(("client_assertion_type".into(), CLIENT_ASSERTION_TYPE.into()));
                form.push((
                    "client_assertion".into(),
                    key.client_assertion(client.client_id, &[client.issuer])?,
                ));
            }
        }
        Ok(TokenRequest {
            url: url.to_owned(),
            form,
            basic,
            dpop: false,
        })
    }

    /// A form parameter's value.
    #[cfg(test)]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The form body.
    pub(crate) fn body(&self) -> String {
        super::endpoints::encode_form(&self.form)
    }

    /// The `Authorization` header of `client_secret_basic`.
    pub(crate) fn basic_auth(&self) -> Option<&str> {
        self.basic.as_deref()
    }
}

/// A successful token endpoint response. `Debug` hides the tokens.
#[derive(Clone)]
pub struct TokenResponse {
    /// `access_token` (for token exchange: the issued token, e.g. an ID-JAG).
    pub access_token: Secret,
    /// `token_type`.
    pub token_type: String,
    /// `expires_in`, in seconds.
    pub expires_in: Option<u64>,
    /// `refresh_token`.
    pub refresh_token: Option<Secret>,
    /// `scope`: the granted scopes, when the AS says.
    pub scope: Option<String>,
    /// `issued_token_type` (token exchange).
    pub issued_token_type: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("refresh_token", &self.refresh_token.is_some())
            .field("scope", &self.scope)
            .field("issued_token_type", &self.issued_token_type)
            .finish_non_exhaustive()
    }
}

/// Printable, bounded text from a server (an error description).
pub(crate) fn tidy(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// The OAuth error of an error response (`error`, `error_description`), when it is one.
pub(crate) fn oauth_error_of(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let code = v.get("error")?.as_str()?;
    Some(match v.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{} ({})", tidy(code), tidy(d)),
        None => tidy(code),
    })
}

impl TokenResponse {
    /// Parses the answer of the token endpoint `url`. `bearer`: the token must be a `Bearer`
    /// (or a `DPoP` one, bound to the key whose proof went with the request), or have no
    /// `token_type` at all
    /// (not for token exchange, whose ID-JAG comes with `N_A`).
    pub(crate) fn parse(
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
        url: &str,
        bearer: bool,
    ) -> Result<TokenResponse, Error> {
        let at = redact(url);
        if !(200..300).contains(&status) {
            return Err(error(
                OAuthErrorKind::Token,
                match oauth_error_of(body) {
                    Some(e) => format!("the token endpoint {at} refused: {e} (HTTP {status})"),
                    None => format!(
                        "the token endpoint {at} answered HTTP {status} ({}), not a token response",
                        content_type.unwrap_or("no content type")
                    ),
                },
            ));
        }
        let not_token = |why: &str| {
            error(
                OAuthErrorKind::Token,
                format!("the token endpoint {at} answered HTTP {status} with {why}, not a token response"),
            )
        };
        let v: Value = serde_json::from_slice(body)
            .map_err(|_| not_token(content_type.unwrap_or("a body that is not JSON")))?;
        let access_token = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| not_token("JSON without an access_token"))?;
        let token_type = v
            .get("token_type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let usable = token_type.is_empty()
            || token_type.eq_ignore_ascii_case("bearer")
            || token_type.eq_ignore_ascii_case("dpop");
        if bearer && !usable {
            return Err(not_token(&format!("token_type {:?}", tidy(&token_type))));
        }
        let expires_in = match v.get("expires_in") {
            Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
            Some(Value::String(s)) => s.parse().ok(),
            _ => None,
        };
        Ok(TokenResponse {
            access_token: Secret::new(access_token),
            token_type,
            expires_in,
            refresh_token: v
                .get("refresh_token")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(Secret::new),
            scope: v.get("scope").and_then(Value::as_str).map(str::to_owned),
            issued_token_type: v
                .get("issued_token_type")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(method: AuthMethod, secret: Option<&Secret>) -> TokenRequest {
        TokenRequest::new(
            "https://as/token",
            vec![("grant_type", "client_credentials".into())],
            &ClientAuth {
                client_id: "id:1",
                secret,
                key: None,
                method,
                issuer: "https://as",
            },
        )
        .unwrap()
    }

    #[test]
    fn client_authentication() {
        let s = Secret::new("s3cret");
        let none = client(AuthMethod::None, None);
        assert_eq!(none.param("client_id"), Some("id:1"));
        assert!(none.basic_auth().is_none());
        let basic = client(AuthMethod::ClientSecretBasic, Some(&s));
        assert_eq!(basic.param("client_id"), None);
        assert_eq!(
            basic.basic_auth(),
            Some(format!("Basic {}", STANDARD.encode("id%3A1:s3cret")).as_str())
        );
        let post = client(AuthMethod::ClientSecretPost, Some(&s));
        assert_eq!(post.param("client_secret"), Some("s3cret"));
        assert!(!format!("{post:?}").contains("s3cret"));
    }

    #[test]
    fn method_choice() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            AuthMethod::choose(None, false, false, None).unwrap(),
            AuthMethod::None
        );
        assert_eq!(
            AuthMethod::choose(None, true, false, None).unwrap(),
            AuthMethod::ClientSecretBasic
        );
        assert_eq!(
            AuthMethod::choose(Some(&l(&["client_secret_post"])), true, false, None).unwrap(),
            AuthMethod::ClientSecretPost
        );
        assert_eq!(
            AuthMethod::choose(
                Some(&l(&["private_key_jwt", "client_secret_basic"])),
                true,
                true,
                None
            )
            .unwrap(),
            AuthMethod::PrivateKeyJwt
        );
        assert!(AuthMethod::choose(Some(&l(&["private_key_jwt"])), true, false, None).is_err());
    }

    #[test]
    fn responses() {
        let ok = TokenResponse::parse(
            200,
            None,
            br#"{"access_token":"a","token_type":"bearer","expires_in":60,"refresh_token":"r"}"#,
            "u",
            true,
        )
        .unwrap();
        assert_eq!(ok.expires_in, Some(60));
        assert!(!format!("{ok:?}").contains("\"a\""));
        let html = TokenResponse::parse(500, Some("text/html"), b"<html>oops</html>", "u", true)
            .unwrap_err();
        assert!(html.to_string().contains("HTTP 500"), "{html}");
        let html200 =
            TokenResponse::parse(200, Some("text/html"), b"<html>", "u", true).unwrap_err();
        assert!(html200.to_string().contains("text/html"), "{html200}");
        let refused = TokenResponse::parse(
            400,
            None,
            br#"{"error":"invalid_grant","error_description":"expired"}"#,
            "u",
            true,
        )
        .unwrap_err();
        assert!(
            refused.to_string().contains("invalid_grant (expired)"),
            "{refused}"
        );
    }
}
