//! One login as a plain value: [`Flow::next_action`] says what it needs (a document, a
//! registration, the user's authorization, a token), and a named transition takes the answer
//! and moves it on, or ends it with an error. No I/O happens here (see `driver`).

use std::sync::Arc;

use serde_json::Value;

use super::challenge::Challenge;
use super::config::OAuthConfig;
use super::endpoints::{checked, parse_url};
use super::jwt::SigningKey;
use super::metadata::{
    authorization_server_metadata_urls, resource_metadata_urls, AuthorizationServerMetadata,
    ResourceMetadata,
};
use super::pkce::Pkce;
use super::registration::ClientIdentity;
use super::token::{AuthMethod, TokenRequest, TokenResponse};
use super::Secret;
use super::{error, OAuthErrorKind};
use crate::error::Error;
use crate::net::url::redact;

/// What a login starts from.
#[derive(Debug, Clone)]
pub struct FlowInputs {
    /// The MCP server's URL.
    pub server_url: String,
    /// The `WWW-Authenticate` challenge that asked for the login, if any.
    pub challenge: Option<Challenge>,
    /// The server's `oauth` config.
    pub config: OAuthConfig,
    /// The key of `config.private_key_file`, loaded.
    pub key: Option<Arc<SigningKey>>,
    /// Where the authorization redirect goes (the code flow needs one).
    pub redirect_uri: Option<String>,
    /// Scopes granted earlier, requested again with the challenged ones (step-up).
    pub granted_scopes: Vec<String>,
    /// The issuer this server was authorized by before, if any.
    pub previous_issuer: Option<String>,
    /// `client_name` for Dynamic Client Registration.
    pub client_name: String,
    /// The workload's JWT, for the `workload_identity` grant (read by the caller).
    pub workload_token: Option<Secret>,
}

/// A response the flow asked for. `Debug` leaves the body out (it may hold tokens).
#[derive(Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The (capped) body.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// What the flow needs next.
pub enum Action {
    /// GET a Protected Resource Metadata candidate; answer with
    /// [`Flow::on_resource_metadata`].
    FetchResourceMetadata(String),
    /// GET an authorization server metadata candidate; answer with
    /// [`Flow::on_authorization_server_metadata`].
    FetchAuthorizationServerMetadata(String),
    /// Look for a client registered earlier with `issuer` for `resource`; answer with
    /// [`Flow::on_client_lookup`].
    LookUpClient {
        /// The authorization server.
        issuer: String,
        /// The resource.
        resource: String,
    },
    /// POST this registration (JSON); answer with [`Flow::on_registration`].
    Register {
        /// The registration endpoint.
        url: String,
        /// The RFC 7591 request.
        body: Value,
    },
    /// Have the user authorize at this URL; answer with the redirect's URL through
    /// [`Flow::on_redirect`].
    Authorize(String),
    /// POST this token request; answer with [`Flow::on_token`].
    RequestToken(TokenRequest),
    /// The login is complete: [`Flow::into_login`].
    Done,
}

impl std::fmt::Debug for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::FetchResourceMetadata(u) => write!(f, "FetchResourceMetadata({u})"),
            Action::FetchAuthorizationServerMetadata(u) => {
                write!(f, "FetchAuthorizationServerMetadata({u})")
            }
            Action::LookUpClient { issuer, .. } => write!(f, "LookUpClient({issuer})"),
            Action::Register { url, .. } => write!(f, "Register({url})"),
            Action::Authorize(u) => write!(f, "Authorize({})", redact(u)),
            Action::RequestToken(r) => write!(f, "RequestToken({r:?})"),
            Action::Done => f.write_str("Done"),
        }
    }
}

/// The result of a login. `Debug` hides the tokens and secrets.
#[derive(Debug, Clone)]
pub struct Login {
    /// The final token response.
    pub tokens: TokenResponse,
    /// The authorization server's issuer.
    pub issuer: String,
    /// The resource the tokens are for (RFC 8707).
    pub resource: String,
    /// The token endpoint (for refreshing).
    pub token_endpoint: String,
    /// The client that got them.
    pub client: ClientIdentity,
    /// How it authenticated to the token endpoint.
    pub auth_method: AuthMethod,
    /// The scopes granted (the response's `scope`, else those requested).
    pub scopes: Vec<String>,
    /// The tokens are bound to the DPoP key whose proofs went with the requests.
    pub dpop: bool,
}

enum Step {
    Prm {
        urls: Vec<String>,
        index: usize,
        from_challenge: bool,
    },
    AsMetadata {
        urls: Vec<String>,
        index: usize,
        legacy: bool,
        discarded: bool,
    },
    LookUpClient,
    Register {
        url: String,
        body: Value,
    },
    Authorize {
        url: String,
    },
    Token {
        request: TokenRequest,
        id_jag: bool,
    },
    Done,
    Failed,
}

/// A login in progress (see the module docs of [`oauth`](super)).
pub struct Flow {
    inputs: FlowInputs,
    step: Step,
    resource: Option<String>,
    prm: Option<ResourceMetadata>,
    issuer: Option<String>,
    metadata: Option<AuthorizationServerMetadata>,
    client: Option<ClientIdentity>,
    auth_method: AuthMethod,
    scopes: Vec<String>,
    pkce: Option<Pkce>,
    state: Option<String>,
    login: Option<Login>,
    /// Token requests to the authorization server carry a DPoP proof (see `dpop`).
    dpop: bool,
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("next", &self.next_action())
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

fn misuse(what: &str) -> Error {
    error(
        OAuthErrorKind::Config,
        format!("the login got {what} it did not ask for"),
    )
}

impl Flow {
    /// A login for `inputs.server_url` (refused unless https, or http to loopback).
    pub fn new(inputs: FlowInputs) -> Result<Flow, Error> {
        checked(&inputs.server_url, "the MCP server")?;
        let from_challenge = inputs
            .challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.clone());
        let urls = resource_metadata_urls(&inputs.server_url, from_challenge.as_deref())?;
        Ok(Flow {
            step: Step::Prm {
                urls,
                index: 0,
                from_challenge: from_challenge.is_some(),
            },
            inputs,
            resource: None,
            prm: None,
            issuer: None,
            metadata: None,
            client: None,
            auth_method: AuthMethod::None,
            scopes: Vec::new(),
            pkce: None,
            state: None,
            login: None,
            dpop: false,
        })
    }

    /// What the flow needs next.
    pub fn next_action(&self) -> Action {
        match &self.step {
            Step::Prm { urls, index, .. } => Action::FetchResourceMetadata(urls[*index].clone()),
            Step::AsMetadata { urls, index, .. } => {
                Action::FetchAuthorizationServerMetadata(urls[*index].clone())
            }
            Step::LookUpClient => Action::LookUpClient {
                issuer: self.issuer.clone().unwrap_or_default(),
                resource: self.resource.clone().unwrap_or_default(),
            },
            Step::Register { url, body } => Action::Register {
                url: url.clone(),
                body: body.clone(),
            },
            Step::Authorize { url } => Action::Authorize(url.clone()),
            Step::Token { request, id_jag } => {
                let mut request = request.clone();
                // Not the enterprise IdP's exchange: that token is no access token.
                request.dpop = self.dpop && !id_jag;
                Action::RequestToken(request)
            }
            Step::Done | Step::Failed => Action::Done,
        }
    }

    /// The result, once [`Action::Done`].
    pub fn into_login(self) -> Option<Login> {
        self.login
    }

    pub(super) fn fail<T>(&mut self, e: Error) -> Result<T, Error> {
        self.step = Step::Failed;
        Err(e)
    }

    /// The answer to [`Action::FetchResourceMetadata`].
    pub fn on_resource_metadata(&mut self, reply: Reply) -> Result<(), Error> {
        let Step::Prm {
            urls,
            index,
            from_challenge,
        } = &mut self.step
        else {
            return Err(misuse("resource metadata"));
        };
        let url = urls[*index].clone();
        if reply.status == 200 {
            let parsed = ResourceMetadata::parse(&reply.body, &url).and_then(|prm| {
                prm.check_resource(&self.inputs.server_url)
                    .map(|r| (prm, r))
            });
            let (prm, resource) = match parsed {
                Ok(v) => v,
                Err(e) => return self.fail(e),
            };
            let issuer = prm.authorization_servers[0].clone();
            log::debug!("oauth: {url} names the authorization server {issuer}");
            self.resource = Some(resource);
            self.prm = Some(prm);
            return self.start_metadata(issuer, false);
        }
        if (400..500).contains(&reply.status) && !*from_challenge && *index + 1 < urls.len() {
            *index += 1;
            return Ok(());
        }
        if (400..500).contains(&reply.status) && !*from_challenge {
            // 2025-03-26: no PRM; the authorization server is at the server's origin.
            let origin = match parse_url(&self.inputs.server_url) {
                Ok(u) => u.origin(),
                Err(e) => return self.fail(e),
            };
            log::debug!("oauth: no protected resource metadata; trying {origin} (2025-03-26)");
            self.resource = super::endpoints::canonical_resource(&self.inputs.server_url).ok();
            return self.start_metadata(origin, true);
        }
        let e = error(
            OAuthErrorKind::Discovery,
            format!(
                "the protected resource metadata at {} answered HTTP {}",
                redact(&url),
                reply.status
            ),
        );
        self.fail(e)
    }

    fn start_metadata(&mut self, issuer: String, legacy: bool) -> Result<(), Error> {
        let urls = if legacy {
            vec![format!("{issuer}/.well-known/oauth-authorization-server")]
        } else {
            match authorization_server_metadata_urls(&issuer) {
                Ok(u) => u,
                Err(e) => return self.fail(e),
            }
        };
        self.issuer = Some(issuer);
        self.step = Step::AsMetadata {
            urls,
            index: 0,
            legacy,
            discarded: false,
        };
        Ok(())
    }

    /// The answer to [`Action::FetchAuthorizationServerMetadata`].
    pub fn on_authorization_server_metadata(&mut self, reply: Reply) -> Result<(), Error> {
        let Step::AsMetadata {
            urls,
            index,
            legacy,
            discarded,
        } = &mut self.step
        else {
            return Err(misuse("authorization server metadata"));
        };
        let url = urls[*index].clone();
        let issuer = self.issuer.clone().unwrap_or_default();
        let legacy = *legacy;
        if reply.status == 200 {
            let mut parsed = AuthorizationServerMetadata::parse(&reply.body, &url, &issuer);
            if legacy && matches!(parsed, Ok(None)) {
                parsed =
                    AuthorizationServerMetadata::parse(&reply.body, &url, &format!("{issuer}/"));
            }
            if legacy && matches!(parsed, Ok(None)) {
                if let Some(own) = same_origin_issuer(&reply.body, &issuer) {
                    log::info!(
                        "oauth: the metadata at {url} names the issuer {own} on the server's own origin; using it (2025-03-26 fallback)"
                    );
                    parsed = AuthorizationServerMetadata::parse(&reply.body, &url, &own);
                }
            }
            match parsed {
                Ok(Some(m)) => return self.on_metadata(m),
                Ok(None) => {
                    log::warn!(
                        "oauth: discarding the metadata at {url}: its issuer is not {issuer}"
                    );
                    *discarded = true;
                }
                Err(e) => return self.fail(e),
            }
        } else if !(400..500).contains(&reply.status) {
            let e = error(
                OAuthErrorKind::Discovery,
                format!(
                    "the authorization server metadata at {} answered HTTP {}",
                    redact(&url),
                    reply.status
                ),
            );
            return self.fail(e);
        }
        if *index + 1 < urls.len() {
            *index += 1;
            return Ok(());
        }
        if legacy && !*discarded {
            return self.on_metadata(AuthorizationServerMetadata::legacy_defaults(&issuer));
        }
        let why = if *discarded {
            "the metadata found names another issuer"
        } else {
            "none was found at the well-known URLs"
        };
        let e = error(
            OAuthErrorKind::Discovery,
            format!("no usable metadata for the authorization server {issuer}: {why}"),
        );
        self.fail(e)
    }
}

/// On the 2025-03-26 fallback (no protected resource metadata), the issuer a metadata document
/// at the MCP server's `origin` names, when that issuer is on the same origin (a path such as
/// `/oauth` after it): the one deliberate exception to RFC 8414 §3.3's identical-issuer rule.
/// The client started from no issuer identifier on that path, only from the server's origin, and
/// a document served there naming an issuer there comes from the party the server already is; an
/// issuer on any other origin is still discarded. The redirect's `iss` (RFC 9207) is then checked
/// against this issuer as usual.
fn same_origin_issuer(body: &[u8], origin: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Issuer {
        issuer: String,
    }
    let named = serde_json::from_slice::<Issuer>(body).ok()?.issuer;
    let url = parse_url(&named).ok()?;
    (url.origin() == origin && url.query.is_none() && !named.contains('#')).then_some(named)
}

mod grants;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod grant_tests;
