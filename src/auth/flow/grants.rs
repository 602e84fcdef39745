//! The second half of a login (see `flow`): once the authorization server is known, the
//! client identity, the scopes, and the grant (the authorization request and its redirect,
//! or the machine grants) up to the tokens.

use super::super::config::Grant;
use super::super::dpop::DpopMode;
use super::super::endpoints::{checked, parse_form, with_query};
use super::super::metadata::AuthorizationServerMetadata;
use super::super::pkce::{random_string, Pkce};
use super::super::registration::{
    parse_registration, registration_request, ClientIdentity, IdentitySource,
};
use super::super::token::{
    AuthMethod, ClientAuth, TokenRequest, TokenResponse, ID_JAG, ID_TOKEN, JWT_BEARER,
    TOKEN_EXCHANGE,
};
use super::super::{error, OAuthErrorKind};
use super::{misuse, Flow, Login, Reply, Step};
use crate::error::Error;
use crate::net::url::redact;

impl Flow {
    pub(super) fn on_metadata(&mut self, m: AuthorizationServerMetadata) -> Result<(), Error> {
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
        let listed = (m.dpop_signing_alg_values_supported.as_deref())
            .is_some_and(|a| a.iter().any(|a| a == super::super::dpop::ALGORITHM));
        self.dpop = match config.dpop {
            DpopMode::Off => false,
            DpopMode::Auto => listed,
            DpopMode::Require if listed => true,
            DpopMode::Require => {
                let e = error(
                    OAuthErrorKind::Refused,
                    format!(
                        "oauth.dpop is \"require\" but the authorization server {} does not bind tokens with DPoP (ES256)",
                        m.issuer
                    ),
                );
                return self.fail(e);
            }
        };
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

    pub(super) fn choose_scopes(&self, m: &AuthorizationServerMetadata) -> Vec<String> {
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

    pub(super) fn scope_param(&self) -> Option<String> {
        (!self.scopes.is_empty()).then(|| self.scopes.join(" "))
    }

    /// The answer to [`Action::LookUpClient`](super::Action::LookUpClient): the client registered earlier, if any.
    pub fn on_client_lookup(&mut self, found: Option<ClientIdentity>) -> Result<(), Error> {
        if !matches!(self.step, Step::LookUpClient) {
            return Err(misuse("a client"));
        }
        if let Some(client) = found {
            self.client = Some(client);
            return self.with_client();
        }
        let m = self.meta()?;
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
        // No `scope` in the registration: an authorization server that keeps a registered
        // client to the scopes it registered with (RFC 7591 §2; oidc-provider does) would refuse
        // the step-up to a scope the server asks for later, and the scopes of each request are
        // chosen per authorization anyway.
        let body = registration_request(&self.inputs.client_name, &redirect, None);
        self.step = Step::Register { url, body };
        Ok(())
    }

    /// The answer to [`Action::Register`](super::Action::Register).
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

    pub(super) fn client_auth(&self) -> Result<ClientAuth<'_>, Error> {
        let client = self.registered()?;
        Ok(ClientAuth {
            client_id: &client.client_id,
            secret: client.client_secret.as_ref(),
            key: self.inputs.key.as_deref(),
            method: self.auth_method,
            issuer: self.issuer.as_deref().unwrap_or(""),
        })
    }

    pub(super) fn resource_param(&self) -> String {
        self.resource.clone().unwrap_or_default()
    }

    pub(super) fn with_client(&mut self) -> Result<(), Error> {
        let m = self.meta()?;
        let client = self.registered()?;
        let supported = m.token_endpoint_auth_methods_supported.as_deref();
        let preferred = self
            .inputs
            .config
            .token_endpoint_auth_method
            .or(client.auth_method)
            .or_else(|| registered_as_public(client, supported).then_some(AuthMethod::None));
        let method = AuthMethod::choose(
            supported,
            client.client_secret.is_some(),
            self.inputs.key.is_some(),
            preferred,
        );
        self.auth_method = match method {
            Ok(m) => m,
            Err(e) => return self.fail(e),
        };
        let to_as = |request| Step::Token {
            request,
            id_jag: false,
        };
        let result = match self.inputs.config.grant {
            Grant::AuthorizationCode => self.authorization_url().map(|url| Step::Authorize { url }),
            Grant::ClientCredentials => self
                .machine_grant(vec![("grant_type", "client_credentials".to_owned())])
                .map(to_as),
            Grant::Enterprise => self.token_exchange().map(|request| Step::Token {
                request,
                id_jag: true,
            }),
            Grant::WorkloadIdentity => {
                let assertion = self.inputs.workload_token.as_ref();
                self.machine_grant(vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.map_or("", |t| t.expose()).to_owned()),
                ])
                .map(to_as)
            }
        };
        match result {
            Ok(step) => {
                self.step = step;
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }

    /// A request to the authorization server's token endpoint for `grant` (its own
    /// parameters), with the resource and the scope, authenticated as the client.
    fn machine_grant(&self, mut grant: Vec<(&str, String)>) -> Result<TokenRequest, Error> {
        let m = self.meta()?;
        grant.push(("resource", self.resource_param()));
        if let Some(s) = self.scope_param() {
            grant.push(("scope", s));
        }
        TokenRequest::new(&m.token_endpoint, grant, &self.client_auth()?)
    }

    pub(super) fn authorization_url(&mut self) -> Result<String, Error> {
        let m = self.meta()?;
        let endpoint = m.authorization_endpoint.clone().unwrap_or_default();
        let redirect =
            self.inputs.redirect_uri.clone().ok_or_else(|| {
                error(OAuthErrorKind::Config, "the code flow needs a redirect URI")
            })?;
        let pkce = Pkce::generate()?;
        let state = random_string(24)?;
        let client_id = self.registered()?.client_id.clone();
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

    pub(super) fn token_exchange(&self) -> Result<TokenRequest, Error> {
        let e = self
            .inputs
            .config
            .enterprise
            .as_ref()
            .ok_or_else(|| out_of_order("its enterprise config"))?;
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

    /// The answer to [`Action::Authorize`](super::Action::Authorize): the URL the authorization server redirected to.
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
        let m = self.meta()?;
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
                .map(|d| format!(" ({})", super::super::token::tidy(d)))
                .unwrap_or_default();
            let e = error(
                OAuthErrorKind::Denied,
                format!(
                    "the authorization was not granted: {}{desc}",
                    super::super::token::tidy(code)
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
                self.pkce
                    .as_ref()
                    .ok_or_else(|| out_of_order("its PKCE verifier"))?
                    .verifier()
                    .to_owned(),
            ),
            ("resource", self.resource_param()),
        ];
        let url = m.token_endpoint.clone();
        match TokenRequest::new(&url, grant, &self.client_auth()?) {
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

    /// The answer to [`Action::RequestToken`](super::Action::RequestToken).
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
            return match self.machine_grant(vec![
                ("grant_type", JWT_BEARER.to_owned()),
                ("assertion", tokens.access_token.expose().to_owned()),
            ]) {
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
        // Bound only if a proof went with the request; `require` takes nothing else.
        let bound = tokens.token_type.eq_ignore_ascii_case("dpop");
        if bound && !self.dpop {
            let e = error(
                OAuthErrorKind::Token,
                format!(
                    "the token endpoint {} issued a DPoP-bound token to a request without a proof",
                    redact(&url)
                ),
            );
            return self.fail(e);
        }
        if self.dpop && !bound && self.inputs.config.dpop == DpopMode::Require {
            let e = error(
                OAuthErrorKind::Token,
                format!(
                    "oauth.dpop is \"require\" but the token endpoint {} issued a {} token",
                    redact(&url),
                    super::super::token::tidy(&tokens.token_type)
                ),
            );
            return self.fail(e);
        }
        let m = self.meta()?;
        let scopes = match &tokens.scope {
            Some(s) => s.split_whitespace().map(str::to_owned).collect(),
            None => self.scopes.clone(),
        };
        self.login = Some(Login {
            issuer: m.issuer.clone(),
            resource: self.resource_param(),
            token_endpoint: m.token_endpoint.clone(),
            client: self.registered()?.clone(),
            auth_method: self.auth_method,
            scopes,
            dpop: bound,
            tokens,
        });
        self.step = Step::Done;
        Ok(())
    }
}

/// Whether a client this flow registered is a public one although its registration response
/// named no `token_endpoint_auth_method`. We register asking for `none` (a native client keeps
/// no secret). RFC 7591 lets an authorization server issue a `client_secret` all the same, and a
/// response that omits the method leaves two readings: the field's default
/// (`client_secret_basic`, RFC 7591 §2) or what was asked for. The authorization server's
/// metadata decides: where it lists `none` among its token endpoint methods, the client stays
/// the public client it asked to be (any secret is kept but not sent); where it does not, the
/// issued secret is used with a method it lists.
fn registered_as_public(client: &ClientIdentity, supported: Option<&[String]>) -> bool {
    client.source == IdentitySource::Registered
        && client.auth_method.is_none()
        && (client.client_secret.is_none()
            || supported.is_some_and(|s| s.iter().any(|m| m == "none")))
}

impl Flow {
    /// The authorization server's metadata, which every step after discovery has.
    fn meta(&self) -> Result<&AuthorizationServerMetadata, Error> {
        self.metadata
            .as_ref()
            .ok_or_else(|| out_of_order("the authorization server's metadata"))
    }

    /// The client registered (or found), which every step after registration has.
    fn registered(&self) -> Result<&ClientIdentity, Error> {
        self.client.as_ref().ok_or_else(|| out_of_order("a client"))
    }
}

/// A step taken before the one it needs (the flow's own order makes this unreachable).
fn out_of_order(what: &str) -> Error {
    error(
        OAuthErrorKind::Config,
        format!("the login went on without {what} (a bug in the flow's order)"),
    )
}
