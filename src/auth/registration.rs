//! Client identity: pre-registered credentials, a Client ID Metadata Document URL, or Dynamic
//! Client Registration (RFC 7591).

use serde_json::{json, Value};

use super::token::{oauth_error_of, AuthMethod};
use super::{error, OAuthErrorKind, Secret};
use crate::error::Error;
use crate::net::url::redact;

/// Where a client id came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdentitySource {
    /// `clientId` in the config.
    PreRegistered,
    /// The host's Client ID Metadata Document URL (`clientMetadataUrl`).
    MetadataDocument,
    /// Registered with this authorization server by Dynamic Client Registration.
    Registered,
}

impl IdentitySource {
    /// A short name (stored with the tokens).
    pub fn name(self) -> &'static str {
        match self {
            IdentitySource::PreRegistered => "pre-registered",
            IdentitySource::MetadataDocument => "metadata-document",
            IdentitySource::Registered => "registered",
        }
    }

    /// Parses [`name`](IdentitySource::name).
    pub fn parse(name: &str) -> Option<IdentitySource> {
        [
            IdentitySource::PreRegistered,
            IdentitySource::MetadataDocument,
            IdentitySource::Registered,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// The client the flow authenticates as. `Debug` hides the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientIdentity {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    pub client_secret: Option<Secret>,
    /// Where it came from.
    pub source: IdentitySource,
    /// The token endpoint auth method the registration settled on, if any.
    pub auth_method: Option<AuthMethod>,
}

/// The RFC 7591 registration request of a native (loopback-redirect) client.
pub(crate) fn registration_request(
    client_name: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Value {
    let mut body = json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    body
}

/// The client of a registration response from `url`.
pub(crate) fn parse_registration(
    status: u16,
    body: &[u8],
    url: &str,
) -> Result<ClientIdentity, Error> {
    let at = redact(url);
    if !(200..300).contains(&status) {
        let what = oauth_error_of(body).unwrap_or_else(|| format!("HTTP {status}"));
        let hint = if what.starts_with("invalid_redirect_uri") {
            "; it does not accept a loopback redirect URI, so configure a pre-registered oauth.clientId"
        } else {
            ""
        };
        return Err(error(
            OAuthErrorKind::Registration,
            format!("dynamic client registration at {at} failed: {what}{hint}"),
        ));
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| {
        error(
            OAuthErrorKind::Registration,
            format!("dynamic client registration at {at} answered with something that is not JSON"),
        )
    })?;
    let client_id = v
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            error(
                OAuthErrorKind::Registration,
                format!("dynamic client registration at {at} returned no client_id"),
            )
        })?;
    Ok(ClientIdentity {
        client_id: client_id.to_owned(),
        client_secret: v
            .get("client_secret")
            .and_then(Value::as_str)
            .map(Secret::new),
        source: IdentitySource::Registered,
        auth_method: v
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .and_then(AuthMethod::parse),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_registration() {
        let r = registration_request("x", "http://127.0.0.1:1/callback", None);
        assert_eq!(r["application_type"], "native");
        assert!(r["grant_types"]
            .as_array()
            .unwrap()
            .contains(&json!("refresh_token")));
        let c = parse_registration(201, br#"{"client_id":"c","client_secret":"s"}"#, "u").unwrap();
        assert_eq!(c.client_id, "c");
        assert!(!format!("{c:?}").contains("\"s\""));
        let e = parse_registration(400, br#"{"error":"invalid_redirect_uri"}"#, "u").unwrap_err();
        assert!(e.to_string().contains("clientId"), "{e}");
    }
}
