//! Discovery documents: Protected Resource Metadata (RFC 9728) and authorization server
//! metadata (RFC 8414 / OpenID Connect Discovery), where to look for them, and what they must
//! say before they are believed.

use serde_json::Value;

use crate::protocol::member::strings;

use super::endpoints::{checked, parse_url};
use super::{error, OAuthErrorKind};
use crate::error::Error;

/// A server's Protected Resource Metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// `resource`: the protected resource's identifier.
    pub resource: Option<String>,
    /// `authorization_servers`: issuers (the first one is used).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
}

fn malformed(what: &str, url: &str, why: &str) -> Error {
    error(
        OAuthErrorKind::Discovery,
        format!(
            "the {what} at {} is malformed: {why}",
            crate::net::url::redact(url)
        ),
    )
}

fn json_object(
    body: &[u8],
    what: &str,
    url: &str,
) -> Result<serde_json::Map<String, Value>, Error> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(malformed(what, url, "not a JSON object")),
        Err(_) => Err(malformed(what, url, "not JSON")),
    }
}

impl ResourceMetadata {
    /// Parses a document fetched from `url`.
    pub fn parse(body: &[u8], url: &str) -> Result<ResourceMetadata, Error> {
        const WHAT: &str = "protected resource metadata";
        let m = json_object(body, WHAT, url)?;
        let authorization_servers: Vec<String> =
            strings(m.get("authorization_servers")).unwrap_or_default();
        if authorization_servers.is_empty() {
            return Err(malformed(WHAT, url, "it names no authorization_servers"));
        }
        Ok(ResourceMetadata {
            resource: m.get("resource").and_then(Value::as_str).map(str::to_owned),
            authorization_servers,
            scopes_supported: strings(m.get("scopes_supported")),
        })
    }

    /// Checks that `resource` names the server at `server_url` (same origin, and the server's
    /// path at or under the resource's), and returns the resource to request tokens for.
    pub fn check_resource(&self, server_url: &str) -> Result<String, Error> {
        let server = super::endpoints::canonical_resource(server_url)?;
        let Some(resource) = &self.resource else {
            return Ok(server);
        };
        let refused = || {
            error(
                OAuthErrorKind::Refused,
                format!(
                    "the protected resource metadata is for {}, not for this server ({})",
                    crate::net::url::redact(resource),
                    crate::net::url::redact(&server)
                ),
            )
        };
        let want = parse_url(resource).map_err(|_| refused())?;
        let have = parse_url(&server)?;
        let want_path = want.path.trim_end_matches('/');
        let have_path = have.path.trim_end_matches('/');
        let under = have_path == want_path
            || have_path
                .strip_prefix(want_path)
                .is_some_and(|rest| rest.starts_with('/'));
        if want.origin() != have.origin() || !under {
            return Err(refused());
        }
        super::endpoints::canonical_resource(resource)
    }
}

/// Where to look for the Protected Resource Metadata of `server_url`: the challenge's URL
/// alone when there is one, else the path-aware then the root well-known URL.
pub(crate) fn resource_metadata_urls(
    server_url: &str,
    from_challenge: Option<&str>,
) -> Result<Vec<String>, Error> {
    if let Some(url) = from_challenge {
        checked(url, "the resource_metadata URL")?;
        return Ok(vec![url.to_owned()]);
    }
    let server = parse_url(server_url)?;
    let origin = server.origin();
    let path = server.path.trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    Ok(urls)
}

/// Where to look for the metadata of `issuer`, in the spec's order (2025-11-25).
pub(crate) fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>, Error> {
    let url = checked(issuer, "the authorization server")?;
    let origin = url.origin();
    let path = url.path.trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// An authorization server's metadata (the parts the flow uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationServerMetadata {
    /// `issuer`.
    pub issuer: String,
    /// `authorization_endpoint`.
    pub authorization_endpoint: Option<String>,
    /// `token_endpoint`.
    pub token_endpoint: String,
    /// `registration_endpoint` (Dynamic Client Registration).
    pub registration_endpoint: Option<String>,
    /// `scopes_supported`.
    pub scopes_supported: Option<Vec<String>>,
    /// `code_challenge_methods_supported` (absent: PKCE support unknown, so refused).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `token_endpoint_auth_methods_supported` (absent: `client_secret_basic`).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `grant_types_supported`.
    pub grant_types_supported: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`.
    pub client_id_metadata_document_supported: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// `dpop_signing_alg_values_supported` (RFC 9449 §5.1): the AS binds tokens to keys.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// False for the default endpoints of a 2025-03-26 server that serves no metadata.
    pub from_document: bool,
}

impl AuthorizationServerMetadata {
    /// Parses a document fetched from `url` for `expected_issuer`. `Ok(None)`: the document is
    /// for another issuer and is discarded.
    pub fn parse(
        body: &[u8],
        url: &str,
        expected_issuer: &str,
    ) -> Result<Option<AuthorizationServerMetadata>, Error> {
        const WHAT: &str = "authorization server metadata";
        let m = json_object(body, WHAT, url)?;
        let issuer = m
            .get("issuer")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed(WHAT, url, "it has no issuer"))?;
        if issuer != expected_issuer {
            return Ok(None);
        }
        let endpoint = |name: &str| -> Result<Option<String>, Error> {
            match m.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    checked(s, name)?;
                    Ok(Some(s.clone()))
                }
                Some(_) => Err(malformed(WHAT, url, &format!("{name} is not a string"))),
            }
        };
        let token_endpoint = endpoint("token_endpoint")?
            .ok_or_else(|| malformed(WHAT, url, "it has no token_endpoint"))?;
        Ok(Some(AuthorizationServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: endpoint("authorization_endpoint")?,
            token_endpoint,
            registration_endpoint: endpoint("registration_endpoint")?,
            scopes_supported: strings(m.get("scopes_supported")),
            code_challenge_methods_supported: strings(m.get("code_challenge_methods_supported")),
            token_endpoint_auth_methods_supported: strings(
                m.get("token_endpoint_auth_methods_supported"),
            ),
            grant_types_supported: strings(m.get("grant_types_supported")),
            client_id_metadata_document_supported: m
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            authorization_response_iss_parameter_supported: m
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            dpop_signing_alg_values_supported: strings(m.get("dpop_signing_alg_values_supported")),
            from_document: true,
        }))
    }

    /// The default endpoints of a 2025-03-26 server without metadata: `/authorize`,
    /// `/token`, `/register` at its origin.
    pub fn legacy_defaults(origin: &str) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: None,
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            grant_types_supported: None,
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
            dpop_signing_alg_values_supported: None,
            from_document: false,
        }
    }

    /// Refuses an AS that does not say it supports PKCE `S256` (a 2025-03-26 server without a
    /// document must support PKCE by that revision).
    pub fn require_s256(&self) -> Result<(), Error> {
        if !self.from_document {
            return Ok(());
        }
        let ok = self
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if ok {
            Ok(())
        } else {
            Err(error(
                OAuthErrorKind::Refused,
                format!(
                    "the authorization server {} does not list S256 in code_challenge_methods_supported; PKCE is required",
                    self.issuer
                ),
            ))
        }
    }

    /// Whether `scopes_supported` lists `scope`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == scope))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_orders() {
        assert_eq!(
            authorization_server_metadata_urls("https://as.test/t1").unwrap(),
            vec![
                "https://as.test/.well-known/oauth-authorization-server/t1",
                "https://as.test/.well-known/openid-configuration/t1",
                "https://as.test/t1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://as.test/").unwrap(),
            vec![
                "https://as.test/.well-known/oauth-authorization-server",
                "https://as.test/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            resource_metadata_urls("https://mcp.test/v1/mcp", None).unwrap(),
            vec![
                "https://mcp.test/.well-known/oauth-protected-resource/v1/mcp",
                "https://mcp.test/.well-known/oauth-protected-resource",
            ]
        );
        assert!(authorization_server_metadata_urls("http://as.test").is_err());
    }

    #[test]
    fn issuer_must_match() {
        let doc = br#"{"issuer":"https://evil.test","token_endpoint":"https://evil.test/t"}"#;
        assert_eq!(
            AuthorizationServerMetadata::parse(doc, "u", "https://as.test").unwrap(),
            None
        );
        let bad = br#"{"issuer":"https://as.test"}"#;
        assert!(AuthorizationServerMetadata::parse(bad, "u", "https://as.test").is_err());
        assert!(AuthorizationServerMetadata::parse(b"<html>", "u", "https://as.test").is_err());
    }

    #[test]
    fn resource_must_be_this_server() {
        let prm = |r: &str| ResourceMetadata {
            resource: Some(r.into()),
            authorization_servers: vec!["https://as".into()],
            scopes_supported: None,
        };
        assert_eq!(
            prm("https://mcp.test")
                .check_resource("https://mcp.test/mcp")
                .unwrap(),
            "https://mcp.test"
        );
        assert_eq!(
            prm("https://MCP.test/mcp/")
                .check_resource("https://mcp.test/mcp")
                .unwrap(),
            "https://mcp.test/mcp"
        );
        assert!(prm("https://other.test/mcp")
            .check_resource("https://mcp.test/mcp")
            .is_err());
        assert!(prm("https://mcp.test/mc")
            .check_resource("https://mcp.test/mcp")
            .is_err());
        assert!(prm("https://mcp.test/a")
            .check_resource("https://mcp.test/mcp")
            .is_err());
    }
}
