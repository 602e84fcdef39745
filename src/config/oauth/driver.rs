//! Runs a [`Flow`] over HTTP (`ureq`): every request bounded as a whole, no redirect followed,
//! bodies capped; the interactive step goes to an [`AuthorizationSession`].

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::authorizer::AuthorizationSession;
use super::flow::{Action, Flow, Login, Reply};
use super::registration::{ClientIdentity, IdentitySource};
use super::token::TokenRequest;
use super::url::{redact, Url};
use super::{error, OAuthErrorKind, Secret};
use crate::config::AuthStorage;
use crate::Error;

/// Limits and timings of the OAuth client.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// Bound on one whole HTTP exchange with an authorization server (connect, send, the
    /// answer and its body).
    pub request_timeout: Duration,
    /// Bound on the interactive step (the user approving in the browser).
    pub login_timeout: Duration,
    /// Tokens are refreshed this long before they expire.
    pub refresh_margin: Duration,
    /// Step-ups (`403 insufficient_scope`) allowed per operation.
    pub max_step_ups: u32,
    /// `client_name` for Dynamic Client Registration.
    pub client_name: String,
    /// The largest metadata or token response read.
    pub max_body_bytes: usize,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            request_timeout: Duration::from_secs(30),
            login_timeout: Duration::from_secs(5 * 60),
            refresh_margin: Duration::from_secs(60),
            max_step_ups: 2,
            client_name: "mcp-runtime".to_owned(),
            max_body_bytes: 1024 * 1024,
        }
    }
}

/// The HTTP side of the OAuth client.
pub(crate) struct Http {
    agent: ureq::Agent,
    options: OAuthOptions,
}

impl Http {
    pub(crate) fn new(options: &OAuthOptions) -> Http {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            // One bound on the whole exchange, name resolution included.
            .timeout_global(Some(options.request_timeout))
            .timeout_connect(Some(options.request_timeout.min(Duration::from_secs(10))))
            .user_agent(concat!("mcp-runtime/", env!("CARGO_PKG_VERSION")))
            .proxy(None)
            .build();
        Http {
            agent: config.into(),
            options: options.clone(),
        }
    }

    fn fail(&self, e: ureq::Error, url: &str) -> Error {
        let at = redact(url);
        match e {
            ureq::Error::Timeout(_) => error(
                OAuthErrorKind::Unreachable,
                format!(
                    "{at} did not answer within {}s",
                    self.options.request_timeout.as_secs_f32()
                ),
            ),
            ureq::Error::BodyExceedsLimit(n) => error(
                OAuthErrorKind::Discovery,
                format!("{at} answered with more than {n} bytes"),
            ),
            other => error(
                OAuthErrorKind::Unreachable,
                format!(
                    "cannot reach {at}: {}",
                    super::token::tidy(&other.to_string())
                ),
            ),
        }
    }

    fn reply(
        &self,
        result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        url: &str,
    ) -> Result<(Reply, Option<String>), Error> {
        let response = result.map_err(|e| self.fail(e, url))?;
        let status = response.status().as_u16();
        let header = |n: &str| {
            response
                .headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type");
        let location = header("location");
        let mut body = Vec::new();
        response
            .into_body()
            .into_with_config()
            .limit(self.options.max_body_bytes as u64)
            .reader()
            .read_to_end(&mut body)
            .map_err(|e| self.fail(ureq::Error::from(e), url))?;
        Ok((
            Reply {
                status,
                content_type,
                body,
            },
            location,
        ))
    }

    /// GET, JSON accepted. Also returns the `Location` of a redirect.
    pub(crate) fn get(&self, url: &str) -> Result<(Reply, Option<String>), Error> {
        log::debug!("oauth: GET {}", redact(url));
        self.reply(
            self.agent
                .get(url)
                .header("Accept", "application/json")
                .call(),
            url,
        )
    }

    /// GET with a bound of its own (shorter than the request timeout, when a deadline is near).
    pub(crate) fn get_until(
        &self,
        url: &str,
        deadline: Instant,
    ) -> Result<(Reply, Option<String>), Error> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(error(
                OAuthErrorKind::Unreachable,
                format!("{} did not answer in time", redact(url)),
            ));
        }
        log::debug!("oauth: GET {}", redact(url));
        let request = self
            .agent
            .get(url)
            .config()
            .timeout_global(Some(left.min(self.options.request_timeout)))
            .build();
        self.reply(request.call(), url)
    }

    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Reply, Error> {
        log::debug!("oauth: POST {}", redact(url));
        let result = self
            .agent
            .post(url)
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes());
        self.reply(result, url).map(|(r, _)| r)
    }

    pub(crate) fn post_token(&self, request: &TokenRequest) -> Result<Reply, Error> {
        log::debug!("oauth: POST {}", redact(&request.url));
        let mut builder = self
            .agent
            .post(&request.url)
            .header("Accept", "application/json")
            .header("Content-Type", "application/x-www-form-urlencoded");
        if let Some(basic) = request.basic_auth() {
            builder = builder.header("Authorization", basic);
        }
        let result = builder.send(request.body().as_bytes());
        self.reply(result, &request.url).map(|(r, _)| r)
    }
}

/// The client registered earlier (by this crate, dynamically) with `issuer` for `resource`.
pub(crate) fn stored_client(
    storage: &dyn AuthStorage,
    issuer: &str,
    resource: &str,
) -> Option<ClientIdentity> {
    let cred = storage.get(&super::provider::credential_id(issuer, resource))?;
    let field = |k: &str| cred.extra.get(k).and_then(Value::as_str).map(str::to_owned);
    if field("issuer").as_deref() != Some(issuer)
        || field("clientSource").as_deref() != Some(IdentitySource::Registered.name())
    {
        return None;
    }
    Some(ClientIdentity {
        client_id: field("clientId")?,
        client_secret: field("clientSecret").map(Secret::new),
        source: IdentitySource::Registered,
        auth_method: field("authMethod")
            .as_deref()
            .and_then(super::token::AuthMethod::parse),
    })
}

/// Runs a login to its end: the documents, the registration, the interactive step (through
/// `session`, bounded by `options.login_timeout`), the tokens. `storage` is where a client
/// registered earlier is looked up. Nothing is stored here.
pub fn run_login(
    mut flow: Flow,
    options: &OAuthOptions,
    session: Option<Box<dyn AuthorizationSession>>,
    storage: Option<&dyn AuthStorage>,
) -> Result<Login, Error> {
    let http = Http::new(options);
    run_with(&mut flow, &http, session, storage)?;
    flow.into_login()
        .ok_or_else(|| error(OAuthErrorKind::Config, "the login ended without tokens"))
}

pub(crate) fn run_with(
    flow: &mut Flow,
    http: &Http,
    mut session: Option<Box<dyn AuthorizationSession>>,
    storage: Option<&dyn AuthStorage>,
) -> Result<(), Error> {
    // Each step is one bounded exchange; a flow has a handful of steps, so this only stops a
    // flow that would go round in circles.
    for _ in 0..32 {
        match flow.next_action() {
            Action::FetchResourceMetadata(url) => {
                let (reply, _) = http.get(&url)?;
                flow.on_resource_metadata(reply)?;
            }
            Action::FetchAuthorizationServerMetadata(url) => {
                let (reply, _) = http.get(&url)?;
                flow.on_authorization_server_metadata(reply)?;
            }
            Action::LookUpClient { issuer, resource } => {
                let found = storage.and_then(|s| stored_client(s, &issuer, &resource));
                flow.on_client_lookup(found)?;
            }
            Action::Register { url, body } => {
                let reply = http.post_json(&url, &body)?;
                flow.on_registration(reply)?;
            }
            Action::Authorize(url) => {
                let parsed = Url::parse(&url)?;
                log::info!("oauth: authorization needed at {}", parsed.without_query());
                let session = session.take().ok_or_else(|| {
                    error(
                        OAuthErrorKind::LoginRequired,
                        "a login in the browser is needed and none can be run here",
                    )
                })?;
                let deadline = Instant::now() + http.options.login_timeout;
                let redirect = session.authorize(&url, deadline)?;
                flow.on_redirect(&redirect)?;
            }
            Action::RequestToken(request) => {
                let reply = http.post_token(&request)?;
                flow.on_token(reply)?;
            }
            Action::Done => return Ok(()),
        }
    }
    Err(error(
        OAuthErrorKind::Config,
        "the login took too many steps",
    ))
}
