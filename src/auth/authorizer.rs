//! The one interactive step of a login: sending the user to the authorization URL and getting
//! the redirect back. Hosts plug their own [`Authorizer`] (e.g. one that shows the URL in their
//! UI); [`browser`] opens the system browser and listens on loopback;
//! [`headless`] follows the URL itself (for servers that approve without a user); [`no_login`]
//! refuses.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::{CookieJar, Http, OAuthOptions};
use super::endpoints::{checked, parse_url, resolve};
use super::{error, OAuthErrorKind};
use crate::error::Error;
use crate::net::request_head::read_head;

/// Starts the interactive step of logins.
pub trait Authorizer: Send + Sync {
    /// Prepares one authorization: whatever receives the redirect is ready when this returns
    /// (its URI goes into the registration and the authorization request). `callback_port`
    /// is the config's `callbackPort`.
    fn begin(&self, callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error>;
}

/// One prepared authorization.
pub trait AuthorizationSession: Send {
    /// The redirect URI (`http://127.0.0.1:<port>/callback` for a loopback listener).
    fn redirect_uri(&self) -> String;
    /// Has the user authorize at `authorization_url` (already checked to be http(s)), and
    /// returns the full URL the authorization server redirected to. Gives up at `deadline`.
    fn authorize(
        self: Box<Self>,
        authorization_url: &str,
        deadline: Instant,
    ) -> Result<String, Error>;
}

/// Opens a URL for the user.
pub type Opener = dyn Fn(&str) -> Result<(), Error> + Send + Sync;

/// The system browser's authorizer (see [`browser`]).
#[derive(Clone)]
struct BrowserAuthorizer {
    opener: Arc<Opener>,
    pasted: Option<crossbeam_channel::Receiver<String>>,
}

impl std::fmt::Debug for BrowserAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserAuthorizer").finish_non_exhaustive()
    }
}

/// Opens `url` in the system browser: the command in `$BROWSER` where it is set (the
/// convention `xdg-open` and Python's `webbrowser` share: the first of a `:`-separated list, its
/// words split on white space, `%s` replaced by the URL or the URL added as the last argument),
/// else `open` on macOS and `xdg-open` elsewhere. Never through a shell.
fn open_system_browser(url: &str) -> Result<(), Error> {
    let (program, args) = browser_command(std::env::var("BROWSER").ok().as_deref(), url);
    let mut child = std::process::Command::new(&program)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| {
            error(
                OAuthErrorKind::LoginRequired,
                format!("cannot open the system browser ({program}: {e})"),
            )
        })?;
    // The launcher exits at once (or, for a `$BROWSER` that is the browser itself, when the
    // login is done); reap it without making the login wait.
    let _ = crate::panic::spawn(
        "mcp-browser".into(),
        crate::panic::Boundary::Browser,
        move || {
            let _ = child.wait();
        },
        |_| {},
    );
    Ok(())
}

/// The program and arguments that open `url`, per `$BROWSER` (see [`open_system_browser`]).
fn browser_command(browser: Option<&str>, url: &str) -> (String, Vec<String>) {
    let chosen = browser
        .and_then(|b| b.split(':').map(str::trim).find(|c| !c.is_empty()))
        .map(|c| c.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|words| !words.is_empty());
    match chosen {
        Some(mut words) => {
            let program = words.remove(0);
            if words.iter().any(|w| w.contains("%s")) {
                for w in &mut words {
                    *w = w.replace("%s", url);
                }
            } else {
                words.push(url.to_owned());
            }
            (program, words)
        }
        None if cfg!(target_os = "macos") => ("open".to_owned(), vec![url.to_owned()]),
        None => ("xdg-open".to_owned(), vec![url.to_owned()]),
    }
}

/// The system browser as the authorizer: it opens the authorization page there (`$BROWSER`,
/// else `open` on macOS and `xdg-open` elsewhere; never through a shell) and receives the
/// redirect on `http://127.0.0.1:<port>/callback`, answering it with a short page.
pub fn browser() -> Arc<dyn Authorizer> {
    Arc::new(BrowserAuthorizer {
        opener: Arc::new(open_system_browser),
        pasted: None,
    })
}

/// [`browser`] with another way to open the URL (a host's own, or a test playing the
/// browser), and optionally taking the redirect as a URL the user pastes (sent on `pasted`),
/// for a browser on another machine than the loopback listener (a session over SSH): the
/// browser ends on an error page at `http://127.0.0.1:<port>/callback?code=...`, whose address
/// the user copies back. Whichever comes first, the listener's request or a pasted URL of the
/// redirect URI, completes the login; a pasted text that is not one is ignored (the state
/// check of the flow guards the rest).
pub fn browser_with(
    opener: impl Fn(&str) -> Result<(), Error> + Send + Sync + 'static,
    pasted: Option<crossbeam_channel::Receiver<String>>,
) -> Arc<dyn Authorizer> {
    Arc::new(BrowserAuthorizer {
        opener: Arc::new(opener),
        pasted,
    })
}

/// Opens `url` the way [`browser`] does (`$BROWSER`, else the system's browser): for an
/// opener of a host's own that also shows something, or any page a host opens.
pub fn open_in_browser(url: &str) -> Result<(), Error> {
    open_system_browser(url)
}

impl Authorizer for BrowserAuthorizer {
    fn begin(&self, callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
        let listener =
            TcpListener::bind(("127.0.0.1", callback_port.unwrap_or(0))).map_err(|e| {
                error(
                    OAuthErrorKind::Config,
                    format!("cannot listen for the login redirect on 127.0.0.1: {e}"),
                )
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::io("the login listener's address", e))?
            .port();
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("the login listener", e))?;
        Ok(Box::new(LoopbackSession {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            opener: Arc::clone(&self.opener),
            pasted: self.pasted.clone(),
        }))
    }
}

struct LoopbackSession {
    listener: TcpListener,
    redirect_uri: String,
    opener: Arc<Opener>,
    pasted: Option<crossbeam_channel::Receiver<String>>,
}

const PAGE_DONE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Signed in</title></head><body style=\"font-family:sans-serif;margin:3em\"><h1>You can close this tab</h1><p>The authorization went back to the application.</p></body></html>";

/// What ended a wait for the redirect.
enum Arrival {
    /// A connection to the listener.
    Connection(TcpStream),
    /// A URL the user pasted.
    Pasted(String),
}

/// Waits until `listener` has a connection or `pasted` a URL, or `deadline`.
fn accept_until(
    listener: &TcpListener,
    pasted: Option<&crossbeam_channel::Receiver<String>>,
    deadline: Instant,
) -> Option<Arrival> {
    loop {
        match listener.accept() {
            Ok((stream, _)) => return Some(Arrival::Connection(stream)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {}
        }
        if let Some(url) = pasted.and_then(|p| p.try_recv().ok()) {
            return Some(Arrival::Pasted(url));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // A pasted URL is looked for between waits: a tenth of a second is quick for a person.
        let cap = if pasted.is_some() { 100 } else { 1000 };
        wait_for_connection(listener, left.min(Duration::from_millis(cap)));
    }
}

/// Waits at most `at_most` for a connection to arrive on the non-blocking `listener`.
#[cfg(unix)]
fn wait_for_connection(listener: &TcpListener, at_most: Duration) {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = at_most.as_millis().max(1) as libc::c_int;
    // SAFETY: one valid pollfd for the listener we own, for at most a second.
    unsafe { libc::poll(&mut pfd, 1, ms) };
}

/// Waits at most `at_most` for a connection (Windows: looked for every 20 ms; a person's
/// browser does not notice).
#[cfg(not(unix))]
fn wait_for_connection(_: &TcpListener, at_most: Duration) {
    std::thread::sleep(at_most.min(Duration::from_millis(20)));
}

/// Whether `query` answers an authorization (carries a code, an error or a state).
fn answers(query: &str) -> bool {
    ["code=", "error=", "state="]
        .iter()
        .any(|k| query.split('&').any(|p| p.starts_with(k)))
}

/// The request target of one HTTP request on `stream` (read with a bound).
fn request_target(stream: &mut TcpStream, deadline: Instant) -> Option<String> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .min(Duration::from_secs(5));
    stream.set_nonblocking(false).ok()?;
    stream
        .set_read_timeout(Some(left.max(Duration::from_millis(10))))
        .ok()?;
    let head = read_head(&mut std::io::BufReader::new(&*stream)).ok()?;
    (head.method == "GET").then_some(())?;
    Some(match head.query.is_empty() {
        true => head.path,
        false => format!("{}?{}", head.path, head.query),
    })
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

impl AuthorizationSession for LoopbackSession {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(
        self: Box<Self>,
        authorization_url: &str,
        deadline: Instant,
    ) -> Result<String, Error> {
        checked(authorization_url, "the authorization URL")?;
        (self.opener)(authorization_url)?;
        loop {
            let arrival = accept_until(&self.listener, self.pasted.as_ref(), deadline);
            let mut stream = match arrival {
                Some(Arrival::Connection(stream)) => stream,
                Some(Arrival::Pasted(url)) => {
                    let url = url.trim();
                    match url.strip_prefix(self.redirect_uri.as_str()) {
                        Some(rest) if rest.starts_with('?') && answers(&rest[1..]) => {
                            return Ok(url.to_owned());
                        }
                        _ => {
                            log::warn!(
                                "oauth: the pasted text is not the redirect to {} (ignored)",
                                self.redirect_uri
                            );
                            continue;
                        }
                    }
                }
                None => {
                    return Err(error(
                        OAuthErrorKind::LoginRequired,
                        "the login was not completed in the browser in time",
                    ))
                }
            };
            let Some(target) = request_target(&mut stream, deadline) else {
                continue;
            };
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            if path != "/callback" || !answers(query) {
                respond(&mut stream, "404 Not Found", "not found");
                continue;
            }
            respond(&mut stream, "200 OK", PAGE_DONE);
            return Ok(format!("{}?{query}", self.redirect_uri));
        }
    }
}

/// See [`headless`].
#[derive(Debug, Clone, Default)]
struct HeadlessAuthorizer {
    options: OAuthOptions,
}

/// The callback port of headless logins when the config sets none.
const HEADLESS_PORT: u16 = 8976;
/// The most redirects a headless login follows.
const MAX_HOPS: usize = 10;

/// An authorizer that follows the authorization URL itself, with no user: it GETs it and each
/// redirect on (with the cookies the servers on the way set, no forms) until one goes to the
/// redirect URI, whose URL it returns; each request is bounded by `options.request_timeout`.
/// For tests, CI and servers that approve known clients without asking. The redirect URI is
/// `http://127.0.0.1:<callbackPort, else 8976>/callback`; nothing listens there.
pub fn headless(options: OAuthOptions) -> Arc<dyn Authorizer> {
    Arc::new(HeadlessAuthorizer { options })
}

impl Authorizer for HeadlessAuthorizer {
    fn begin(&self, callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
        Ok(Box::new(HeadlessSession {
            redirect_uri: format!(
                "http://127.0.0.1:{}/callback",
                callback_port.unwrap_or(HEADLESS_PORT)
            ),
            options: self.options.clone(),
        }))
    }
}

struct HeadlessSession {
    redirect_uri: String,
    options: OAuthOptions,
}

impl AuthorizationSession for HeadlessSession {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(
        self: Box<Self>,
        authorization_url: &str,
        deadline: Instant,
    ) -> Result<String, Error> {
        let http = Http::new(&self.options);
        let target = parse_url(&self.redirect_uri)?;
        let mut url = authorization_url.to_owned();
        let mut jar = CookieJar::default();
        for _ in 0..MAX_HOPS {
            let current = checked(&url, "the authorization URL")?;
            let (reply, location) = http.get_with_cookies(&url, deadline, &mut jar)?;
            let Some(location) = location.filter(|_| (300..400).contains(&reply.status)) else {
                return Err(error(
                    OAuthErrorKind::LoginRequired,
                    format!(
                        "the authorization endpoint {} answered HTTP {} without redirecting: it needs a user, so log in interactively",
                        current.without_query(),
                        reply.status
                    ),
                ));
            };
            let next = resolve(&current, &location);
            if let Ok(n) = parse_url(&next) {
                if n.origin() == target.origin() && n.path == target.path {
                    return Ok(next);
                }
            }
            url = next;
        }
        Err(error(
            OAuthErrorKind::LoginRequired,
            "the authorization endpoint redirected too many times without reaching the redirect URI",
        ))
    }
}

/// An authorizer that refuses every interactive login: for contexts that must not open a
/// browser (a server connecting in the background reports `needs login` instead).
pub fn no_login() -> Arc<dyn Authorizer> {
    Arc::new(NoLoginAuthorizer)
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoLoginAuthorizer;

impl Authorizer for NoLoginAuthorizer {
    fn begin(&self, _callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
        Err(error(
            OAuthErrorKind::LoginRequired,
            "this server needs a login (run the login for it, then retry)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_command_follows_the_browser_variable() {
        let url = "https://as.test/authorize?a=1&b=2";
        let (p, a) = browser_command(Some("firefox --new-window:chromium"), url);
        assert_eq!(
            (p.as_str(), a),
            ("firefox", vec!["--new-window".to_owned(), url.to_owned()])
        );
        let (p, a) = browser_command(Some("w3m -o x=%s -dump"), url);
        assert_eq!(p, "w3m");
        assert_eq!(
            a,
            vec!["-o".to_owned(), format!("x={url}"), "-dump".to_owned()]
        );
        for unset in [None, Some(""), Some(" : ")] {
            let (p, a) = browser_command(unset, url);
            assert!(p == "xdg-open" || p == "open", "{p}");
            assert_eq!(a, vec![url.to_owned()]);
        }
    }

    #[test]
    fn a_pasted_redirect_completes_the_login_and_anything_else_is_ignored() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let shown = Arc::new(parking_lot::Mutex::new(String::new()));
        let seen = Arc::clone(&shown);
        let authorizer = browser_with(
            move |url| {
                *seen.lock() = url.to_owned();
                Ok(())
            },
            Some(rx),
        );
        let session = authorizer.begin(None).unwrap();
        let redirect = session.redirect_uri();
        tx.send("not a URL at all".into()).unwrap();
        tx.send("https://elsewhere.test/callback?code=x".into())
            .unwrap();
        tx.send(format!("  {redirect}?code=c0de&state=s  \n"))
            .unwrap();
        let got = session
            .authorize(
                "https://as.test/authorize?x=1",
                Instant::now() + Duration::from_secs(10),
            )
            .unwrap();
        assert_eq!(got, format!("{redirect}?code=c0de&state=s"));
        assert_eq!(*shown.lock(), "https://as.test/authorize?x=1");
    }
}
