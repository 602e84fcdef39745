//! Runs a [`Flow`] over HTTP (`ureq`): every request bounded as a whole, no redirect followed,
//! bodies capped; the interactive step goes to an [`AuthorizationSession`].

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::authorizer::AuthorizationSession;
use super::dpop::Dpop;
use super::endpoints::parse_url;
use super::flow::{Action, Flow, Reply};
use super::registration::{ClientIdentity, IdentitySource};
use super::token::TokenRequest;
use super::AuthStorage;
use super::{error, OAuthErrorKind, Secret};
use crate::error::Error;
use crate::net::fetch::{Failure, Fetch};
use crate::net::url::redact;

/// Limits and timings of the OAuth client, and the proxies it goes through. `Debug` shows the
/// proxies without their credentials.
#[derive(Clone)]
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
    /// The server's own proxy (its config's `proxy`: a proxy URL or `direct`), which its
    /// OAuth requests (discovery, registration, tokens) go through whatever their host.
    /// `None`: `default_proxy`, else the environment's.
    pub proxy: Option<String>,
    /// The host's proxy ([`HttpOptions::proxy`](crate::transport::HttpOptions::proxy)), with
    /// the environment's `no_proxy` and loopback rules.
    pub default_proxy: Option<String>,
    /// The server's `caFile`, trusted by its OAuth requests as by its MCP requests (see
    /// [`HttpTarget::ca_file`](crate::transport::HttpTarget::ca_file)).
    pub ca_file: Option<PathBuf>,
    /// The host's CA file ([`HttpOptions::ca_file`](crate::transport::HttpOptions::ca_file)).
    pub default_ca_file: Option<PathBuf>,
    /// The server's client certificate and key, shown to its authorization server too.
    pub client_cert: Option<PathBuf>,
    /// The key of `client_cert` (never logged).
    pub client_key: Option<PathBuf>,
}

impl std::fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("request_timeout", &self.request_timeout)
            .field("login_timeout", &self.login_timeout)
            .field("refresh_margin", &self.refresh_margin)
            .field("max_step_ups", &self.max_step_ups)
            .field("client_name", &self.client_name)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("proxy", &crate::net::proxy::shown(&self.proxy))
            .field(
                "default_proxy",
                &crate::net::proxy::shown(&self.default_proxy),
            )
            .field("ca_file", &self.ca_file)
            .field("default_ca_file", &self.default_ca_file)
            .field("client_cert", &self.client_cert)
            .field("client_key", &self.client_key)
            .finish()
    }
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
            proxy: None,
            default_proxy: None,
            ca_file: None,
            default_ca_file: None,
            client_cert: None,
            client_key: None,
        }
    }
}

/// The HTTP side of the OAuth client (see `wire` for why it is not `ureq`'s request API).
pub(crate) struct Http {
    /// Built on first use: every remote server without its own authorization has a provider,
    /// and most never answer 401 (measured, building the agent config and connector chain up
    /// front was a twentieth of a fleet of HTTP connects).
    wire: OnceLock<Fetch>,
    options: OAuthOptions,
}

impl Http {
    pub(crate) fn new(options: &OAuthOptions) -> Http {
        Http {
            wire: OnceLock::new(),
            options: options.clone(),
        }
    }

    fn wire(&self) -> &Fetch {
        self.wire.get_or_init(|| {
            Fetch::new(
                self.options.max_body_bytes,
                self.options.proxy.clone(),
                self.options.default_proxy.clone(),
                crate::net::target::TlsSettings {
                    ca_file: self.options.ca_file.clone(),
                    default_ca_file: self.options.default_ca_file.clone(),
                    client_cert: self.options.client_cert.clone(),
                    client_key: self.options.client_key.clone(),
                },
            )
        })
    }

    fn fail(&self, e: Failure, url: &str) -> Error {
        let at = redact(url);
        match e {
            Failure::Timeout => error(
                OAuthErrorKind::Unreachable,
                format!(
                    "{at} did not answer within {}s",
                    self.options.request_timeout.as_secs_f32()
                ),
            ),
            Failure::TooLarge(n) => error(
                OAuthErrorKind::Discovery,
                format!("{at} answered with more than {n} bytes"),
            ),
            Failure::Other(why) => error(
                OAuthErrorKind::Unreachable,
                format!(
                    "cannot reach {at}: {}{}",
                    super::token::tidy(&why),
                    crate::net::tls::hint(&why)
                ),
            ),
        }
    }

    fn exchange(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<(Reply, Option<String>), Error> {
        self.exchange_with(method, url, headers, body, deadline, |_| {})
    }

    /// [`exchange`](Http::exchange), with a look at the response's headers first.
    fn exchange_with(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        deadline: Instant,
        look: impl FnOnce(&crate::net::fetch::Response),
    ) -> Result<(Reply, Option<String>), Error> {
        log::debug!("oauth: {method} {}", redact(url));
        // Its span: a child of the request or connect that needed it.
        let traced = crate::telemetry::http_request(method, url, "oauth");
        let response = self
            .wire()
            .request(method, url, headers, body, deadline)
            .map_err(|e| self.fail(e, url));
        traced.finish(response.as_ref().map(|r| r.status));
        let response = response?;
        look(&response);
        let location = response.header("location").map(str::to_owned);
        let content_type = response.header("content-type").map(str::to_owned);
        log::debug!("oauth: {} answered HTTP {}", redact(url), response.status);
        Ok((
            Reply {
                status: response.status,
                content_type,
                body: response.body,
            },
            location,
        ))
    }

    /// A GET of a headless login: the cookies `jar` holds for the URL's host go with it, and
    /// those it sets come back into the jar (an authorization server that approves without a
    /// user may still keep its interaction's state in cookies). Bounded like
    /// [`get_until`](Http::get_until).
    pub(crate) fn get_with_cookies(
        &self,
        url: &str,
        deadline: Instant,
        jar: &mut CookieJar,
    ) -> Result<(Reply, Option<String>), Error> {
        let deadline = deadline.min(self.deadline());
        let host = parse_url(url)?.origin();
        let cookie = jar.header(&host);
        let mut headers = vec![("Accept", "text/html,application/json")];
        if let Some(c) = &cookie {
            headers.push(("Cookie", c.as_str()));
        }
        self.exchange_with("GET", url, &headers, None, deadline, |response| {
            for set in response.headers_named("set-cookie") {
                jar.store(&host, set);
            }
        })
    }

    fn deadline(&self) -> Instant {
        Instant::now() + self.options.request_timeout
    }

    /// GET, JSON accepted. Also returns the `Location` of a redirect.
    pub(crate) fn get(&self, url: &str) -> Result<(Reply, Option<String>), Error> {
        self.get_until(url, self.deadline())
    }

    /// GET bounded by the request timeout and by `deadline`, whichever comes first.
    pub(crate) fn get_until(
        &self,
        url: &str,
        deadline: Instant,
    ) -> Result<(Reply, Option<String>), Error> {
        let deadline = deadline.min(self.deadline());
        self.exchange(
            "GET",
            url,
            &[("Accept", "application/json")],
            None,
            deadline,
        )
    }

    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Reply, Error> {
        let headers = [
            ("Accept", "application/json"),
            ("Content-Type", "application/json"),
        ];
        let body = body.to_string();
        self.exchange(
            "POST",
            url,
            &headers,
            Some(body.as_bytes()),
            self.deadline(),
        )
        .map(|(r, _)| r)
    }

    /// POSTs a token request; with `dpop` (and a request the flow marked for it), with a
    /// proof, re-sent once with the nonce of a `use_dpop_nonce` refusal (RFC 9449 §8).
    pub(crate) fn post_token(
        &self,
        request: &TokenRequest,
        dpop: Option<Dpop<'_>>,
    ) -> Result<Reply, Error> {
        let dpop = dpop.filter(|_| request.dpop);
        let body = request.body();
        let url = &request.url;
        let mut retried = false;
        loop {
            let mut headers = vec![
                ("Accept", "application/json"),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ];
            if let Some(basic) = request.basic_auth() {
                headers.push(("Authorization", basic));
            }
            let proof = match dpop {
                Some(d) => Some(
                    d.key
                        .proof("POST", url, d.nonces.get(url).as_deref(), None)?,
                ),
                None => None,
            };
            if let Some(p) = &proof {
                headers.push(("DPoP", p));
            }
            let mut nonce = None;
            let (reply, _) = self.exchange_with(
                "POST",
                url,
                &headers,
                Some(body.as_bytes()),
                self.deadline(),
                |response| nonce = response.header("dpop-nonce").map(str::to_owned),
            )?;
            let fresh = match (dpop, &nonce) {
                (Some(d), Some(n)) => d.nonces.set(url, n),
                _ => false,
            };
            let asks_nonce = reply.status == 400
                && super::dpop::error_code(&reply.body).as_deref() == Some("use_dpop_nonce");
            if !retried && fresh && asks_nonce {
                log::debug!("oauth: the token endpoint asks for a DPoP nonce; sending it");
                retried = true;
                continue;
            }
            return Ok(reply);
        }
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

pub(crate) fn run_with(
    flow: &mut Flow,
    http: &Http,
    mut session: Option<Box<dyn AuthorizationSession>>,
    storage: Option<&dyn AuthStorage>,
    dpop: Option<Dpop<'_>>,
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
                let parsed = parse_url(&url)?;
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
                let reply = http.post_token(&request, dpop)?;
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

/// The cookies of one headless login, by origin (`scheme://host:port`): a name and a value
/// each, sent back to the origin that set them. Paths, expiry and the other attributes are not
/// kept: the jar lives for one login. `Debug` shows no value.
#[derive(Default)]
pub(crate) struct CookieJar {
    cookies: Vec<(String, String, String)>,
}

impl std::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CookieJar")
            .field("cookies", &self.cookies.len())
            .finish()
    }
}

impl CookieJar {
    /// Keeps (or replaces, or with an empty value or `Max-Age=0` drops) the cookie of a
    /// `Set-Cookie` value from `origin`.
    pub(crate) fn store(&mut self, origin: &str, set_cookie: &str) {
        let mut parts = set_cookie.split(';');
        let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return;
        }
        let expired = parts.any(|a| a.trim().eq_ignore_ascii_case("max-age=0"));
        self.cookies.retain(|(o, n, _)| !(o == origin && n == name));
        if !value.is_empty() && !expired {
            self.cookies
                .push((origin.to_owned(), name.to_owned(), value.to_owned()));
        }
    }

    /// The `Cookie` header for `origin`, if it set any.
    pub(crate) fn header(&self, origin: &str) -> Option<String> {
        let pairs: Vec<String> = self
            .cookies
            .iter()
            .filter(|(o, _, _)| o == origin)
            .map(|(_, n, v)| format!("{n}={v}"))
            .collect();
        (!pairs.is_empty()).then(|| pairs.join("; "))
    }
}

#[cfg(test)]
mod cookie_tests {
    use super::CookieJar;

    #[test]
    fn a_jar_sends_each_origin_its_own_cookies() {
        let mut jar = CookieJar::default();
        jar.store(
            "http://a:1",
            "_interaction=abc; path=/interaction/x; httponly",
        );
        jar.store("http://a:1", "_session=s1; path=/");
        jar.store("http://b:1", "other=1");
        assert_eq!(
            jar.header("http://a:1").unwrap(),
            "_interaction=abc; _session=s1"
        );
        jar.store("http://a:1", "_interaction=; max-age=0");
        jar.store("http://a:1", "_session=s2");
        assert_eq!(jar.header("http://a:1").unwrap(), "_session=s2");
        assert_eq!(jar.header("http://c:1"), None);
        assert!(!format!("{jar:?}").contains("s2"));
    }
}
