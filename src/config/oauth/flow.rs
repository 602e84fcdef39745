//! One login as a plain value: [`Flow::next_action`] says what it needs (a document, a
//! registration, the user's authorization, a token), and a named transition takes the answer
//! and moves it on, or ends it with an error. No I/O happens here (see `driver`).

use std::sync::Arc;

use serde_json::Value;

use super::challenge::Challenge;
use super::config::{Grant, OAuthConfig};
use super::jwt::SigningKey;
use super::metadata::{
    authorization_server_metadata_urls, resource_metadata_urls, AuthorizationServerMetadata,
    ResourceMetadata,
};
use super::pkce::{random_string, Pkce};
use super::registration::{
    parse_registration, registration_request, ClientIdentity, IdentitySource,
};
use super::token::{
    AuthMethod, ClientAuth, TokenRequest, TokenResponse, ID_JAG, ID_TOKEN, JWT_BEARER,
    TOKEN_EXCHANGE,
};
use super::url::{checked, parse_form, redact, with_query, Url};
use super::{error, OAuthErrorKind};
use crate::Error;

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
}

/// A response the flow asked for.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The (capped) body.
    pub body: Vec<u8>,
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
            Step::Token { request, .. } => Action::RequestToken(request.clone()),
            Step::Done | Step::Failed => Action::Done,
        }
    }

    /// The issuer, once the metadata is known.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    /// The resource, once known.
    pub fn resource(&self) -> Option<&str> {
        self.resource.as_deref()
    }

    /// The scopes the login requests, once chosen.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The `state` of the authorization request, once built.
    pub fn state(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The result, once [`Action::Done`].
    pub fn into_login(self) -> Option<Login> {
        self.login
    }

    fn fail<T>(&mut self, e: Error) -> Result<T, Error> {
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
            let origin = match Url::parse(&self.inputs.server_url) {
                Ok(u) => u.origin(),
                Err(e) => return self.fail(e),
            };
            log::debug!("oauth: no protected resource metadata; trying {origin} (2025-03-26)");
            self.resource = super::url::canonical_resource(&self.inputs.server_url).ok();
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

    fn on_metadata(&mut self, m: AuthorizationServerMetadata) -> Result<(), Error> {
        let config = &self.inputs.config;
        if config.grant == Grant::AuthorizationCode {
            if let Err(e) = m.require_s256() {
                return self.fail(e);
            }
            match &m.authorization_endpoint {
                Some(a) => {
                    if let Err(e) = checked(a, "the authorization endpoint") {
                        return self.fail(e);
                    }
                }
                None => {
                    let e = error(
                        OAuthErrorKind::Discovery,
                        format!(
                            "the authorization server {} has no authorization_endpoint",
                            m.issuer
                        ),
                    );
                    return self.fail(e);
                }
            }
        }
        if let Err(e) = checked(&m.token_endpoint, "the token endpoint") {
            return self.fail(e);
        }
        self.scopes = self.choose_scopes(&m);
        let issuer = m.issuer.clone();
        self.issuer = Some(issuer.clone());
        let config = &self.inputs.config;
        if let Some(client_id) = &config.client_id {
            if let Some(previous) = &self.inputs.previous_issuer {
                if *previous != issuer {
                    let e = error(
                        OAuthErrorKind::Refused,
                        format!(
                            "the server's authorization server changed from {previous} to {issuer}; the configured oauth.clientId belongs to the old one: update it (or log out to accept the new one)"
                        ),
                    );
                    return self.fail(e);
                }
            }
            self.client = Some(ClientIdentity {
                client_id: client_id.clone(),
                client_secret: config.client_secret.clone(),
                source: IdentitySource::PreRegistered,
                auth_method: None,
            });
            self.metadata = Some(m);
            return self.with_client();
        }
        if let Some(url) = &config.client_metadata_url {
            if m.client_id_metadata_document_supported {
                self.client = Some(ClientIdentity {
                    client_id: url.clone(),
                    client_secret: None,
                    source: IdentitySource::MetadataDocument,
                    auth_method: None,
                });
                self.metadata = Some(m);
                return self.with_client();
            }
        }
        self.metadata = Some(m);
        self.step = Step::LookUpClient;
        Ok(())
    }

    fn choose_scopes(&self, m: &AuthorizationServerMetadata) -> Vec<String> {
        let challenged = self.inputs.challenge.as_ref().and_then(|c| c.scope.clone());
        let base = challenged
            .or_else(|| self.inputs.config.scopes.clone())
            .or_else(|| self.prm.as_ref().and_then(|p| p.scopes_supported.clone()))
            .unwrap_or_default();
        let mut scopes: Vec<String> = Vec::new();
        for s in self.inputs.granted_scopes.iter().chain(base.iter()) {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        let offline = "offline_access";
        if self.inputs.config.grant == Grant::AuthorizationCode
            && m.lists_scope(offline)
            && !scopes.iter().any(|s| s == offline)
        {
            scopes.push(offline.to_owned());
        }
        scopes
    }

    fn scope_param(&self) -> Option<String> {
        (!self.scopes.is_empty()).then(|| self.scopes.join(" "))
    }

    /// The answer to [`Action::LookUpClient`]: the client registered earlier, if any.
    pub fn on_client_lookup(&mut self, found: Option<ClientIdentity>) -> Result<(), Error> {
        if !matches!(self.step, Step::LookUpClient) {
            return Err(misuse("a client"));
        }
        if let Some(client) = found {
            self.client = Some(client);
            return self.with_client();
        }
        let m = self.metadata.as_ref().expect("metadata before the client");
        let Some(url) = m.registration_endpoint.clone() else {
            let e = error(
                OAuthErrorKind::Registration,
                format!(
                    "no client identity for the authorization server {}: it offers no dynamic client registration{}; configure oauth.clientId (and oauth.clientSecret) of a client registered there, or oauth.clientMetadataUrl",
                    m.issuer,
                    if m.client_id_metadata_document_supported { "" } else { " nor client ID metadata documents" }
                ),
            );
            return self.fail(e);
        };
        if let Err(e) = checked(&url, "the registration endpoint") {
            return self.fail(e);
        }
        let Some(redirect) = self.inputs.redirect_uri.clone() else {
            return self.fail(error(
                OAuthErrorKind::Config,
                "dynamic client registration needs a redirect URI",
            ));
        };
        let body = registration_request(
            &self.inputs.client_name,
            &redirect,
            self.scope_param().as_deref(),
        );
        self.step = Step::Register { url, body };
        Ok(())
    }

    /// The answer to [`Action::Register`].
    pub fn on_registration(&mut self, reply: Reply) -> Result<(), Error> {
        let Step::Register { url, .. } = &self.step else {
            return Err(misuse("a registration"));
        };
        match parse_registration(reply.status, &reply.body, url) {
            Ok(client) => {
                self.client = Some(client);
                self.with_client()
            }
            Err(e) => self.fail(e),
        }
    }

    fn client_auth(&self) -> ClientAuth<'_> {
        let client = self.client.as_ref().expect("a client");
        ClientAuth {
            client_id: &client.client_id,
            secret: client.client_secret.as_ref(),
            key: self.inputs.key.as_deref(),
            method: self.auth_method,
            issuer: self.issuer.as_deref().unwrap_or(""),
        }
    }

    fn resource_param(&self) -> String {
        self.resource.clone().unwrap_or_default()
    }

    fn with_client(&mut self) -> Result<(), Error> {
        let m = self.metadata.as_ref().expect("metadata before the client");
        let client = self.client.as_ref().expect("a client");
        let preferred = self
            .inputs
            .config
            .token_endpoint_auth_method
            .or(client.auth_method);
        let method = AuthMethod::choose(
            m.token_endpoint_auth_methods_supported.as_deref(),
            client.client_secret.is_some(),
            self.inputs.key.is_some(),
            preferred,
        );
        self.auth_method = match method {
            Ok(m) => m,
            Err(e) => return self.fail(e),
        };
        let token_endpoint = m.token_endpoint.clone();
        let scope = self.scope_param();
        let resource = self.resource_param();
        let result = match self.inputs.config.grant {
            Grant::AuthorizationCode => self.authorization_url().map(|url| Step::Authorize { url }),
            Grant::ClientCredentials => {
                let mut grant = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("resource", resource),
                ];
                if let Some(s) = scope {
                    grant.push(("scope", s));
                }
                TokenRequest::new(&token_endpoint, grant, &self.client_auth()).map(|request| {
                    Step::Token {
                        request,
                        id_jag: false,
                    }
                })
            }
            Grant::Enterprise => self.token_exchange().map(|request| Step::Token {
                request,
                id_jag: true,
            }),
        };
        match result {
            Ok(step) => {
                self.step = step;
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }

    fn authorization_url(&mut self) -> Result<String, Error> {
        let m = self.metadata.as_ref().expect("metadata");
        let endpoint = m.authorization_endpoint.clone().unwrap_or_default();
        let redirect =
            self.inputs.redirect_uri.clone().ok_or_else(|| {
                error(OAuthErrorKind::Config, "the code flow needs a redirect URI")
            })?;
        let pkce = Pkce::generate()?;
        let state = random_string(24)?;
        let client_id = self.client.as_ref().expect("a client").client_id.clone();
        let mut pairs = vec![
            ("response_type", "code".to_owned()),
            ("client_id", client_id),
            ("redirect_uri", redirect),
            ("code_challenge", pkce.challenge().to_owned()),
            ("code_challenge_method", "S256".to_owned()),
            ("state", state.clone()),
            ("resource", self.resource_param()),
        ];
        if let Some(s) = self.scope_param() {
            pairs.push(("scope", s));
        }
        self.pkce = Some(pkce);
        self.state = Some(state);
        Ok(with_query(&endpoint, &pairs))
    }

    fn token_exchange(&self) -> Result<TokenRequest, Error> {
        let e = self
            .inputs
            .config
            .enterprise
            .as_ref()
            .expect("enterprise config");
        checked(&e.idp_token_endpoint, "the IdP token endpoint")?;
        let mut grant = vec![
            ("grant_type", TOKEN_EXCHANGE.to_owned()),
            ("requested_token_type", ID_JAG.to_owned()),
            ("audience", self.issuer.clone().unwrap_or_default()),
            ("resource", self.resource_param()),
            ("subject_token", e.id_token.expose().to_owned()),
            ("subject_token_type", ID_TOKEN.to_owned()),
        ];
        if let Some(s) = self.scope_param() {
            grant.push(("scope", s));
        }
        let idp = ClientAuth {
            client_id: &e.idp_client_id,
            secret: e.idp_client_secret.as_ref(),
            key: None,
            method: if e.idp_client_secret.is_some() {
                AuthMethod::ClientSecretPost
            } else {
                AuthMethod::None
            },
            issuer: &e.idp_token_endpoint,
        };
        TokenRequest::new(&e.idp_token_endpoint, grant, &idp)
    }

    /// The answer to [`Action::Authorize`]: the URL the authorization server redirected to.
    /// Checks `state`, then `iss` (RFC 9207, by the 2026-07-28 table), then `error`.
    pub fn on_redirect(&mut self, redirect_url: &str) -> Result<(), Error> {
        if !matches!(self.step, Step::Authorize { .. }) {
            return Err(misuse("a redirect"));
        }
        let query = redirect_url.split_once('?').map(|(_, q)| q).unwrap_or("");
        let query = query.split('#').next().unwrap_or("");
        let params = parse_form(query);
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if get("state") != self.state.as_deref() {
            let e = error(
                OAuthErrorKind::Refused,
                "the authorization response's state does not match this login (ignored)",
            );
            return self.fail(e);
        }
        let m = self.metadata.as_ref().expect("metadata");
        let iss_supported = m.authorization_response_iss_parameter_supported;
        match (iss_supported, get("iss")) {
            (_, Some(iss)) if iss != m.issuer => {
                let e = error(
                    OAuthErrorKind::Refused,
                    format!(
                        "the authorization response came from another issuer than {} (ignored)",
                        m.issuer
                    ),
                );
                return self.fail(e);
            }
            (true, None) => {
                let e = error(
                    OAuthErrorKind::Refused,
                    format!(
                        "the authorization response carries no iss although {} says it sends one (ignored)",
                        m.issuer
                    ),
                );
                return self.fail(e);
            }
            _ => {}
        }
        if let Some(code) = get("error") {
            let desc = get("error_description")
                .map(|d| format!(" ({})", super::token::tidy(d)))
                .unwrap_or_default();
            let e = error(
                OAuthErrorKind::Denied,
                format!(
                    "the authorization was not granted: {}{desc}",
                    super::token::tidy(code)
                ),
            );
            return self.fail(e);
        }
        let Some(code) = get("code").filter(|c| !c.is_empty()) else {
            return self.fail(error(
                OAuthErrorKind::Denied,
                "the authorization response carries no code",
            ));
        };
        let grant = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            (
                "redirect_uri",
                self.inputs.redirect_uri.clone().unwrap_or_default(),
            ),
            (
                "code_verifier",
                self.pkce.as_ref().expect("pkce").verifier().to_owned(),
            ),
            ("resource", self.resource_param()),
        ];
        let url = m.token_endpoint.clone();
        match TokenRequest::new(&url, grant, &self.client_auth()) {
            Ok(request) => {
                self.step = Step::Token {
                    request,
                    id_jag: false,
                };
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }

    /// The answer to [`Action::RequestToken`].
    pub fn on_token(&mut self, reply: Reply) -> Result<(), Error> {
        let Step::Token { request, id_jag } = &self.step else {
            return Err(misuse("a token response"));
        };
        let id_jag = *id_jag;
        let url = request.url.clone();
        let parsed = TokenResponse::parse(
            reply.status,
            reply.content_type.as_deref(),
            &reply.body,
            &url,
            !id_jag,
        );
        let tokens = match parsed {
            Ok(t) => t,
            Err(e) => return self.fail(e),
        };
        if id_jag {
            if tokens
                .issued_token_type
                .as_deref()
                .is_some_and(|t| t != ID_JAG)
            {
                let e = error(
                    OAuthErrorKind::Token,
                    format!(
                        "the IdP at {} issued a token that is not an ID-JAG",
                        redact(&url)
                    ),
                );
                return self.fail(e);
            }
            let m = self.metadata.as_ref().expect("metadata");
            let mut grant = vec![
                ("grant_type", JWT_BEARER.to_owned()),
                ("assertion", tokens.access_token.expose().to_owned()),
                ("resource", self.resource_param()),
            ];
            if let Some(s) = self.scope_param() {
                grant.push(("scope", s));
            }
            let url = m.token_endpoint.clone();
            return match TokenRequest::new(&url, grant, &self.client_auth()) {
                Ok(request) => {
                    self.step = Step::Token {
                        request,
                        id_jag: false,
                    };
                    Ok(())
                }
                Err(e) => self.fail(e),
            };
        }
        let m = self.metadata.as_ref().expect("metadata");
        let scopes = match &tokens.scope {
            Some(s) => s.split_whitespace().map(str::to_owned).collect(),
            None => self.scopes.clone(),
        };
        self.login = Some(Login {
            issuer: m.issuer.clone(),
            resource: self.resource_param(),
            token_endpoint: m.token_endpoint.clone(),
            client: self.client.clone().expect("a client"),
            auth_method: self.auth_method,
            scopes,
            tokens,
        });
        self.step = Step::Done;
        Ok(())
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
