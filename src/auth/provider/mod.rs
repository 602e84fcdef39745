//! [`OAuthProvider`]: the tokens of one HTTP server, as the transport's
//! [`AuthProvider`](crate::transport::AuthProvider). Refreshes before expiry; logs in (or
//! steps up) when the transport reports a `401` or a `403 insufficient_scope`, a bounded number
//! of times per operation. One refresh or login runs at a time; none runs under a lock.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Map, Value};

use super::authorizer::Authorizer;
use super::challenge::Challenge;
use super::config::{Grant, OAuthConfig};
use super::dpop::{Dpop, DpopKey, DpopMode, Nonces};
use super::driver::{run_with, Http, OAuthOptions};
use super::flow::{Flow, FlowInputs, Login};
use super::jwt::SigningKey;
use super::registration::{ClientIdentity, IdentitySource};
use super::token::AuthMethod;
use super::{error, now_ms, OAuthErrorKind, Secret};
use super::{AuthStorage, Credential};
use crate::error::Error;

/// The storage id of the tokens an issuer granted for a resource.
pub fn credential_id(issuer: &str, resource: &str) -> String {
    format!("oauth|{issuer}|{resource}")
}

/// The storage id of the entry that remembers which issuer last authorized a server.
pub fn resource_index_id(server_resource: &str) -> String {
    format!("oauth-resource|{server_resource}")
}

/// The retries of one operation (one request and its re-sends).
#[derive(Debug, Default, Clone)]
pub(crate) struct Operation {
    refreshed: bool,
    logins: u32,
    step_ups: u32,
}

/// What is known about a server's authorization, for `auth status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthStatus {
    /// Tokens are stored.
    pub logged_in: bool,
    /// The authorization server.
    pub issuer: Option<String>,
    /// When the access token expires (ms since the epoch), if known.
    pub expires_at: Option<u64>,
    /// A refresh token is stored.
    pub refreshable: bool,
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// The tokens are bound to a key the client holds (DPoP).
    pub bound: bool,
}

/// The stored tokens of this server, read from a [`Credential`].
#[derive(Clone)]
struct Tokens {
    credential: Credential,
    issuer: String,
    resource: String,
    token_endpoint: String,
    client: ClientIdentity,
    auth_method: AuthMethod,
    scopes: Vec<String>,
    /// The key the tokens are bound to (DPoP), if they are.
    dpop: Option<Arc<DpopKey>>,
}

impl Tokens {
    fn from_credential(credential: Credential) -> Option<Tokens> {
        let field = |k: &str| {
            credential
                .extra
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        Some(Tokens {
            issuer: field("issuer")?,
            resource: field("resource")?,
            token_endpoint: field("tokenEndpoint")?,
            client: ClientIdentity {
                client_id: field("clientId")?,
                client_secret: field("clientSecret").map(Secret::new),
                source: field("clientSource")
                    .as_deref()
                    .and_then(IdentitySource::parse)
                    .unwrap_or(IdentitySource::PreRegistered),
                auth_method: None,
            },
            auth_method: field("authMethod")
                .as_deref()
                .and_then(AuthMethod::parse)
                .unwrap_or(AuthMethod::None),
            scopes: field("scope")
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            dpop: field("dpopKey").as_deref().and_then(|stored| {
                let key = DpopKey::from_stored(stored);
                if key.is_none() {
                    log::warn!("oauth: the stored DPoP key cannot be read; the tokens are sent without proofs");
                }
                key.map(Arc::new)
            }),
            credential,
        })
    }
}

struct State {
    tokens: Option<Tokens>,
    loaded: bool,
    /// A refresh or login is running (on some thread, with no lock held).
    busy: bool,
    /// Bumped by every refresh or login that ended.
    generation: u64,
    /// Why the last `401`/`403` was not worth a re-send (see [`AuthProvider::refusal`]).
    refusal: Option<Error>,
    /// Why the last refresh failed, told with a login that then could not run.
    refresh_failure: Option<String>,
}

/// OAuth for one HTTP server. Cheap to clone (shared state).
#[derive(Clone)]
pub struct OAuthProvider {
    inner: Arc<Inner>,
}

struct Inner {
    server_url: String,
    server_resource: String,
    config: OAuthConfig,
    key: Option<Arc<SigningKey>>,
    storage: Arc<dyn AuthStorage>,
    authorizer: Arc<dyn Authorizer>,
    options: OAuthOptions,
    http: Http,
    state: Mutex<State>,
    changed: Condvar,
    /// The latest DPoP nonce of each authorization server (token endpoints), and of the MCP
    /// server: apart, as the two may share an origin and each has its own.
    nonces: Nonces,
    resource_nonces: Nonces,
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("server", &crate::net::url::redact(&self.inner.server_url))
            .field("grant", &self.inner.config.grant)
            .finish_non_exhaustive()
    }
}

/// Clears `busy` when a refresh or login ends, however it ends.
struct BusyGuard<'a>(&'a Inner);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock();
        s.busy = false;
        s.generation += 1;
        drop(s);
        self.0.changed.notify_all();
    }
}

impl OAuthProvider {
    /// The provider of the server at `server_url` with its `oauth` config (the object a
    /// server's config has under `oauth`: `clientId`, `scopes`, `callbackPort`, ...; `{}` or
    /// `null` for none). Loads the private key now (a bad config or key is a config error);
    /// does no network I/O.
    pub fn new(
        server_url: &str,
        oauth: &serde_json::Value,
        storage: Arc<dyn AuthStorage>,
        authorizer: Arc<dyn Authorizer>,
        options: OAuthOptions,
    ) -> Result<OAuthProvider, Error> {
        let config = match oauth {
            serde_json::Value::Null => OAuthConfig::default(),
            oauth => OAuthConfig::from_value(oauth)?,
        };
        OAuthProvider::with_config(server_url, config, storage, authorizer, options)
    }

    /// [`OAuthProvider::new`] with the config already read.
    pub(crate) fn with_config(
        server_url: &str,
        config: OAuthConfig,
        storage: Arc<dyn AuthStorage>,
        authorizer: Arc<dyn Authorizer>,
        options: OAuthOptions,
    ) -> Result<OAuthProvider, Error> {
        super::endpoints::checked(server_url, "the MCP server")?;
        let server_resource = super::endpoints::canonical_resource(server_url)?;
        let key = config.signing_key()?.map(Arc::new);
        // A host's `Duration::MAX` ("no bound") is a year: no deadline made of it overflows.
        let mut options = options;
        for d in [
            &mut options.request_timeout,
            &mut options.login_timeout,
            &mut options.refresh_margin,
        ] {
            *d = crate::cancel::capped(*d);
        }
        Ok(OAuthProvider {
            inner: Arc::new(Inner {
                server_url: server_url.to_owned(),
                server_resource,
                config,
                key,
                // The host's, behind a catch: a panic fails the authorization it served.
                storage: super::caught::CaughtStorage::wrap(storage),
                authorizer: super::caught::CaughtAuthorizer::wrap(authorizer),
                http: Http::new(&options),
                options,
                state: Mutex::new(State {
                    tokens: None,
                    loaded: false,
                    busy: false,
                    generation: 0,
                    refusal: None,
                    refresh_failure: None,
                }),
                changed: Condvar::new(),
                nonces: Nonces::default(),
                resource_nonces: Nonces::default(),
            }),
        })
    }

    /// The stored tokens of this server (read from storage once).
    fn tokens(&self) -> Option<Tokens> {
        {
            let s = self.inner.state.lock();
            if s.loaded {
                return s.tokens.clone();
            }
        }
        let loaded = self.load();
        let mut s = self.inner.state.lock();
        if !s.loaded {
            s.loaded = true;
            s.tokens = loaded;
        }
        s.tokens.clone()
    }

    fn load(&self) -> Option<Tokens> {
        let storage = &self.inner.storage;
        let index = storage.get(&resource_index_id(&self.inner.server_resource))?;
        let issuer = index.extra.get("issuer")?.as_str()?.to_owned();
        let resource = index.extra.get("resource")?.as_str()?.to_owned();
        let tokens = Tokens::from_credential(storage.get(&credential_id(&issuer, &resource))?)?;
        // Only tokens of the issuer and resource they were stored under.
        (tokens.issuer == issuer && tokens.resource == resource).then_some(tokens)
    }

    /// The issuer that last authorized this server, per the index.
    fn previous_issuer(&self) -> Option<String> {
        let index = self
            .inner
            .storage
            .get(&resource_index_id(&self.inner.server_resource))?;
        index.extra.get("issuer")?.as_str().map(str::to_owned)
    }

    /// What is stored for this server.
    pub fn status(&self) -> AuthStatus {
        match self.tokens() {
            Some(t) => AuthStatus {
                logged_in: true,
                issuer: Some(t.issuer),
                expires_at: t.credential.expires_at,
                refreshable: t.credential.refresh_token.is_some(),
                scopes: t.scopes,
                bound: t.dpop.is_some(),
            },
            None => AuthStatus {
                logged_in: false,
                issuer: None,
                expires_at: None,
                refreshable: false,
                scopes: Vec::new(),
                bound: false,
            },
        }
    }

    /// Forgets this server's tokens (and a client registered for them).
    pub fn logout(&self) -> Result<(), Error> {
        self.wait_idle();
        let tokens = self.tokens();
        let storage = &self.inner.storage;
        if let Some(t) = tokens {
            storage.remove(&credential_id(&t.issuer, &t.resource))?;
        }
        storage.remove(&resource_index_id(&self.inner.server_resource))?;
        let mut s = self.inner.state.lock();
        s.tokens = None;
        s.loaded = true;
        Ok(())
    }

    /// Waits (bounded) until no refresh or login runs.
    fn wait_idle(&self) {
        let deadline = Instant::now()
            + self.inner.options.login_timeout
            + self.inner.options.request_timeout * 8;
        let mut s = self.inner.state.lock();
        while s.busy {
            if self.inner.changed.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
    }

    /// Claims the right to refresh or log in. `None`: another thread did (and it has ended
    /// by the time this returns, or the bound ran out).
    fn claim(&self) -> Option<BusyGuard<'_>> {
        let mut s = self.inner.state.lock();
        if !s.busy {
            s.busy = true;
            return Some(BusyGuard(&self.inner));
        }
        let generation = s.generation;
        let deadline = Instant::now()
            + self.inner.options.login_timeout
            + self.inner.options.request_timeout * 8;
        while s.busy && s.generation == generation {
            if self.inner.changed.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
        None
    }

    /// Runs a login now (the code flow through the authorizer, or the configured machine
    /// grant), with the challenge of the `401`/`403` that asked for it, if any.
    pub fn login(&self, www_authenticate: Option<&str>) -> Result<(), Error> {
        let challenge = www_authenticate.and_then(Challenge::parse);
        match self.claim() {
            Some(_guard) => self.login_now(challenge, Vec::new()),
            None => Ok(()),
        }
    }

    fn login_now(&self, challenge: Option<Challenge>, granted: Vec<String>) -> Result<(), Error> {
        let inner = &self.inner;
        let session = match inner.config.grant {
            Grant::AuthorizationCode => Some(inner.authorizer.begin(inner.config.callback_port)?),
            _ => None,
        };
        // A key for this login, used if the authorization server binds tokens (see `dpop`).
        let key = match inner.config.dpop {
            DpopMode::Off => None,
            _ => Some(Arc::new(DpopKey::generate()?)),
        };
        let flow = Flow::new(FlowInputs {
            server_url: inner.server_url.clone(),
            challenge,
            config: inner.config.clone(),
            key: inner.key.clone(),
            redirect_uri: session.as_ref().map(|s| s.redirect_uri()),
            granted_scopes: granted,
            previous_issuer: self.previous_issuer(),
            client_name: inner.options.client_name.clone(),
            workload_token: inner.config.workload_assertion()?,
        })?;
        let mut flow = flow;
        let dpop = key.as_deref().map(|key| Dpop {
            key,
            nonces: &inner.nonces,
        });
        run_with(
            &mut flow,
            &inner.http,
            session,
            Some(inner.storage.as_ref()),
            dpop,
        )?;
        let login = flow
            .into_login()
            .ok_or_else(|| error(OAuthErrorKind::Config, "the login ended without tokens"))?;
        self.store_login(login, key.as_deref())
    }

    fn store_login(&self, login: Login, key: Option<&DpopKey>) -> Result<(), Error> {
        let mut extra = Map::new();
        if let (true, Some(key)) = (login.dpop, key) {
            // The tokens are bound to it: it is kept with them (in the same 0600 store).
            extra.insert("dpopKey".into(), json!(key.stored()));
        }
        extra.insert("issuer".into(), json!(login.issuer));
        extra.insert("resource".into(), json!(login.resource));
        extra.insert("tokenEndpoint".into(), json!(login.token_endpoint));
        extra.insert("clientId".into(), json!(login.client.client_id));
        extra.insert("clientSource".into(), json!(login.client.source.name()));
        if login.client.source == IdentitySource::Registered {
            // A client this crate registered: its secret exists nowhere else.
            if let Some(s) = &login.client.client_secret {
                extra.insert("clientSecret".into(), json!(s.expose()));
            }
        }
        extra.insert("authMethod".into(), json!(login.auth_method.name()));
        extra.insert("scope".into(), json!(login.scopes.join(" ")));
        if let Some(at) = self.refresh_at(login.tokens.expires_in) {
            extra.insert("refreshAt".into(), json!(at));
        }
        let credential = Credential {
            access_token: login.tokens.access_token.expose().to_owned(),
            expires_at: expires_at(&login.tokens),
            refresh_token: login
                .tokens
                .refresh_token
                .as_ref()
                .map(|s| s.expose().to_owned()),
            extra,
        };
        self.save(credential)
    }

    fn save(&self, credential: Credential) -> Result<(), Error> {
        let tokens = Tokens::from_credential(credential.clone())
            .ok_or_else(|| error(OAuthErrorKind::Config, "incomplete credential"))?;
        let storage = &self.inner.storage;
        storage.set(&credential_id(&tokens.issuer, &tokens.resource), credential)?;
        let mut index = Map::new();
        index.insert("issuer".into(), json!(tokens.issuer));
        index.insert("resource".into(), json!(tokens.resource));
        storage.set(
            &resource_index_id(&self.inner.server_resource),
            Credential {
                access_token: String::new(),
                expires_at: None,
                refresh_token: None,
                extra: index,
            },
        )?;
        let mut s = self.inner.state.lock();
        s.tokens = Some(tokens);
        s.loaded = true;
        Ok(())
    }

    /// The server answered `401`: refresh once per operation, else log in again (once per
    /// operation). `Ok`: re-send the request.
    pub(crate) fn on_unauthorized(
        &self,
        operation: &mut Operation,
        www_authenticate: Option<&str>,
    ) -> Result<(), Error> {
        let challenge = www_authenticate.and_then(Challenge::parse);
        if !operation.refreshed {
            operation.refreshed = true;
            if let Some(t) = self
                .tokens()
                .filter(|t| t.credential.refresh_token.is_some())
            {
                match self.claim() {
                    Some(_guard) => match self.refresh_now(&t) {
                        Ok(()) => return Ok(()),
                        Err(e) => {
                            log::debug!("oauth: refresh failed ({e}); logging in again");
                            self.inner.state.lock().refresh_failure = Some(match e {
                                Error::OAuth { message, .. } => message,
                                e => e.to_string(),
                            });
                        }
                    },
                    None => return Ok(()),
                }
            }
        }
        if operation.logins >= 1 {
            return Err(error(
                OAuthErrorKind::RetryLimit,
                "the server still answers 401 after a new login",
            ));
        }
        operation.logins += 1;
        match self.claim() {
            Some(_guard) => self.login_now(challenge, Vec::new()),
            None => Ok(()),
        }
    }

    /// The server answered `403` with `insufficient_scope`: log in again with the union of the
    /// granted and the challenged scopes, at most `max_step_ups` times per operation. `Ok`:
    /// re-send the request.
    pub(crate) fn on_insufficient_scope(
        &self,
        operation: &mut Operation,
        www_authenticate: &str,
    ) -> Result<(), Error> {
        let challenge = Challenge::parse(www_authenticate)
            .filter(Challenge::is_insufficient_scope)
            .ok_or_else(|| {
                error(
                    OAuthErrorKind::Denied,
                    "the server refused the request (403) without an insufficient_scope challenge",
                )
            })?;
        if operation.step_ups >= self.inner.options.max_step_ups {
            return Err(error(
                OAuthErrorKind::RetryLimit,
                format!(
                    "the server still asks for more scope after {} step-ups",
                    operation.step_ups
                ),
            ));
        }
        operation.step_ups += 1;
        let granted = self.tokens().map(|t| t.scopes).unwrap_or_default();
        match self.claim() {
            Some(_guard) => self.login_now(Some(challenge), granted),
            None => Ok(()),
        }
    }
}

impl OAuthProvider {
    /// Whether a `401`/`403` is worth a re-send, remembering why not (with the refresh failure
    /// that led to a login that could not run, if that is how it went).
    fn settle(&self, outcome: Result<(), Error>) -> bool {
        let refused = || {
            let index = self
                .inner
                .storage
                .get(&resource_index_id(&self.inner.server_resource))?;
            index.extra.get("refused")?.as_str().map(str::to_owned)
        };
        let refused = if outcome.is_err() { refused() } else { None };
        let mut s = self.inner.state.lock();
        let refresh_failure = s.refresh_failure.take().or(refused);
        match outcome {
            Ok(()) => {
                s.refusal = None;
                true
            }
            Err(e) => {
                log::info!("oauth: {e}");
                s.refusal = Some(match (e, refresh_failure) {
                    (Error::OAuth { kind, message }, Some(why)) => Error::OAuth {
                        kind,
                        message: format!(
                            "{message}; the stored tokens could not be refreshed: {why}"
                        ),
                    },
                    (e, _) => e,
                });
                false
            }
        }
    }
}

impl crate::net::target::AuthProvider for OAuthProvider {
    fn authorization(&self) -> Option<String> {
        let mut tokens = self.tokens()?;
        if self.needs_refresh(&tokens) && tokens.credential.refresh_token.is_some() {
            if let Some(_guard) = self.claim() {
                if let Err(e) = self.refresh_now(&tokens) {
                    log::debug!("oauth: refresh before expiry failed: {e}");
                }
            }
            tokens = self.tokens()?;
        }
        let expired = tokens
            .credential
            .expires_at
            .is_some_and(|at| now_ms() >= at);
        if expired || tokens.credential.access_token.is_empty() {
            return None;
        }
        let scheme = if tokens.dpop.is_some() {
            "DPoP"
        } else {
            "Bearer"
        };
        Some(format!("{scheme} {}", tokens.credential.access_token))
    }

    fn authorize_request(&self, method: &str, url: &str) -> Vec<(String, String)> {
        self.request_headers(method, url)
    }

    fn on_nonce(&self, url: &str, nonce: &str) {
        self.inner.resource_nonces.set(url, nonce);
    }

    /// A `401`: the first of a request refreshes (or, without a refresh token, logs in), the
    /// second logs in, a third fails.
    fn on_unauthorized(&self, www_authenticate: Option<&str>, retries: u32) -> bool {
        let mut operation = Operation {
            refreshed: retries >= 1,
            logins: retries.saturating_sub(1),
            step_ups: 0,
        };
        let outcome = OAuthProvider::on_unauthorized(self, &mut operation, www_authenticate);
        self.settle(outcome)
    }

    fn refusal(&self) -> Option<Error> {
        self.inner.state.lock().refusal.clone()
    }

    /// A `403 insufficient_scope`: logs in again with the union of the granted and the
    /// challenged scopes, at most [`OAuthOptions::max_step_ups`] times per request.
    fn on_forbidden(&self, www_authenticate: &str, retries: u32) -> bool {
        let mut operation = Operation {
            refreshed: true,
            logins: 0,
            step_ups: retries,
        };
        let outcome = self.on_insufficient_scope(&mut operation, www_authenticate);
        self.settle(outcome)
    }
}

mod refresh;

mod dpop_headers;
use refresh::expires_at;
