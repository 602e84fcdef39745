//! The one interactive step of a login: sending the user to the authorization URL and getting
//! the redirect back. Hosts plug their own [`Authorizer`] (e.g. one that shows the URL in their
//! UI); [`BrowserAuthorizer`] opens the system browser and listens on loopback;
//! [`HeadlessAuthorizer`] follows the URL itself (for servers that approve without a user).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::driver::{CookieJar, Http, OAuthOptions};
use super::url::{checked, resolve, Url};
use super::{error, OAuthErrorKind};
use crate::error::Error;

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

/// Opens the system browser (no shell: `open` on macOS, `xdg-open` elsewhere, with the URL as
/// an argument) and receives the redirect on `http://127.0.0.1:<port>/callback`, answering it
/// with a short page.
#[derive(Clone)]
pub struct BrowserAuthorizer {
    opener: Arc<Opener>,
}

impl std::fmt::Debug for BrowserAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserAuthorizer").finish_non_exhaustive()
    }
}

impl Default for BrowserAuthorizer {
    fn default() -> Self {
        BrowserAuthorizer::new()
    }
}

/// Opens `url` in the system browser.
fn open_system_browser(url: &str) -> Result<(), Error> {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let mut child = std::process::Command::new(program)
        .arg(url)
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
    // The launcher exits at once; reap it without making the login wait.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(())
}

impl BrowserAuthorizer {
    /// The system browser.
    pub fn new() -> BrowserAuthorizer {
        BrowserAuthorizer {
            opener: Arc::new(open_system_browser),
        }
    }

    /// Another way to open the URL (a host's own, or a test playing the browser).
    pub fn with_opener(
        opener: impl Fn(&str) -> Result<(), Error> + Send + Sync + 'static,
    ) -> BrowserAuthorizer {
        BrowserAuthorizer {
            opener: Arc::new(opener),
        }
    }
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
        }))
    }
}

struct LoopbackSession {
    listener: TcpListener,
    redirect_uri: String,
    opener: Arc<Opener>,
}

const PAGE_DONE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Signed in</title></head><body style=\"font-family:sans-serif;margin:3em\"><h1>You can close this tab</h1><p>The authorization went back to the application.</p></body></html>";

/// Waits until `listener` has a connection, or `deadline`.
fn accept_until(listener: &TcpListener, deadline: Instant) -> Option<TcpStream> {
    use std::os::fd::AsRawFd;
    loop {
        match listener.accept() {
            Ok((stream, _)) => return Some(stream),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        let mut pfd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: one valid pollfd for the listener we own, for at most a second.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }
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
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let line = text.lines().next()?;
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
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
            let Some(mut stream) = accept_until(&self.listener, deadline) else {
                return Err(error(
                    OAuthErrorKind::LoginRequired,
                    "the login was not completed in the browser in time",
                ));
            };
            let Some(target) = request_target(&mut stream, deadline) else {
                continue;
            };
            let (path, query) = target.split_once('?').unwrap_or((&target, ""));
            let answers = ["code=", "error=", "state="]
                .iter()
                .any(|k| query.split('&').any(|p| p.starts_with(k)));
            if path != "/callback" || !answers {
                respond(&mut stream, "404 Not Found", "not found");
                continue;
            }
            respond(&mut stream, "200 OK", PAGE_DONE);
            return Ok(format!("{}?{query}", self.redirect_uri));
        }
    }
}

/// Follows the authorization URL itself, with no user: GETs it and each redirect on (with the
/// cookies the servers on the way set, no forms) until one goes to the redirect URI, whose URL
/// it returns. For
/// tests, CI and servers that approve known clients without asking. The redirect URI is
/// `http://127.0.0.1:<callbackPort, else 8976>/callback`; nothing listens there.
#[derive(Debug, Clone, Default)]
pub struct HeadlessAuthorizer {
    options: OAuthOptions,
}

/// The callback port of headless logins when the config sets none.
const HEADLESS_PORT: u16 = 8976;
/// The most redirects a headless login follows.
const MAX_HOPS: usize = 10;

impl HeadlessAuthorizer {
    /// A headless authorizer whose requests are bounded by `options.request_timeout`.
    pub fn new(options: OAuthOptions) -> HeadlessAuthorizer {
        HeadlessAuthorizer { options }
    }
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
        let target = Url::parse(&self.redirect_uri)?;
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
            if let Ok(n) = Url::parse(&next) {
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

/// Refuses every interactive login: for contexts that must not open a browser (a server
/// connecting in the background reports `needs login` instead).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLoginAuthorizer;

impl Authorizer for NoLoginAuthorizer {
    fn begin(&self, _callback_port: Option<u16>) -> Result<Box<dyn AuthorizationSession>, Error> {
        Err(error(
            OAuthErrorKind::LoginRequired,
            "this server needs a login (run the login for it, then retry)",
        ))
    }
}
