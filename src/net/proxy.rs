//! Which proxy, if any, a request to a URL goes through: the rules, with no I/O.
//!
//! The environment's variables follow curl's conventions, with two decisions written down:
//!
//! - `https_proxy` / `HTTPS_PROXY` for `https://` URLs; `http_proxy` for `http://` URLs, and
//!   **not** `HTTP_PROXY`: a CGI program gets `HTTP_PROXY` from a request's `Proxy:` header
//!   ("httpoxy"), so curl ignores the uppercase spelling and so do we; `all_proxy` /
//!   `ALL_PROXY` for either when the scheme's own is unset. The lowercase spelling wins where
//!   both are set, as in curl. An empty value is unset.
//! - `no_proxy` / `NO_PROXY`: comma-separated, spaces ignored. `*` alone matches every host. A
//!   name matches itself and every name under it (`example.com` and `.example.com` both match
//!   `example.com` and `api.example.com`, never `badexample.com`); a leading `*.` is read as a
//!   leading dot. An IP address matches itself, and `addr/bits` a range (IPv6 without
//!   brackets). A `:port` suffix is ignored (curl does not match ports either). Case does not
//!   matter.
//! - **Loopback is reached directly** (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`), as Go
//!   and Chromium do and curl does not: a proxy's `localhost` is not ours, and a local MCP
//!   server sent to a company proxy fails. `<-loopback>` in `no_proxy` (Chromium's spelling)
//!   takes the rule back, so loopback goes through the proxy like any other host.
//!
//! The proxy URL is `http://` (the default when no scheme is given) or `https://`; a
//! `user:password@` in it is sent as `Proxy-Authorization: Basic` and never shown (see
//! [`ProxyUrl`]'s `Debug` and [`ProxyUrl::redacted`]).
//!
//! [`choose`] turns the settings (a server's own, the HTTP options', the environment as read by
//! the caller) into the proxy of one connection.

use std::net::IpAddr;

use super::target::{HttpOptions, HttpTarget};
use crate::error::Error;

/// A proxy to go through.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProxyUrl {
    /// The URL as given (with its credentials, if any: never logged).
    url: String,
    /// The same without its credentials, for messages.
    shown: String,
}

impl ProxyUrl {
    /// Parses a proxy URL: `http://` or `https://` (a bare `host:port` is `http://`), a host,
    /// an optional port, optional credentials, nothing after the authority but `/`.
    pub(crate) fn parse(text: &str) -> Result<ProxyUrl, String> {
        let text = text.trim();
        let with_scheme = if text.contains("://") {
            text.to_owned()
        } else {
            format!("http://{text}")
        };
        let (scheme, rest) = with_scheme.split_once("://").unwrap_or(("", ""));
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!(
                "a proxy URL must be http:// or https:// (got {scheme}://)"
            ));
        }
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#']) {
            return Err("a proxy URL is a scheme, a host and a port, nothing more".into());
        }
        let host_port = match authority.rsplit_once('@') {
            Some((_, host_port)) => host_port,
            None => authority,
        };
        if host_port.is_empty() || host_port.starts_with(':') {
            return Err("a proxy URL needs a host".into());
        }
        Ok(ProxyUrl {
            url: format!("{scheme}://{authority}"),
            shown: format!("{scheme}://{host_port}"),
        })
    }

    /// The URL, credentials included: for the connection only.
    pub(crate) fn expose(&self) -> &str {
        &self.url
    }

    /// The URL without its credentials.
    pub(crate) fn redacted(&self) -> &str {
        &self.shown
    }

    /// `Proxy-Authorization: Basic ...\r\n` for the credentials in the URL (percent-decoded),
    /// if it has any: for a request written to the proxy by hand (the sandbox's proxy going
    /// out through this one).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn authorization_line(&self) -> Option<String> {
        use base64::Engine as _;
        let authority = self.url.split_once("://")?.1;
        let (userinfo, _) = authority.rsplit_once('@')?;
        let decoded = percent_decoded(userinfo);
        let encoded = base64::engine::general_purpose::STANDARD.encode(decoded);
        Some(format!("Proxy-Authorization: Basic {encoded}\r\n"))
    }

    /// Whether the connection to the proxy itself is TLS.
    pub(crate) fn is_https(&self) -> bool {
        self.url.starts_with("https://")
    }
}

impl std::fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// `%XX` escapes decoded (a URL's userinfo).
#[cfg_attr(not(unix), allow(dead_code))]
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// One `no_proxy` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `*`: every host.
    All,
    /// A name: itself and every name under it (lowercase, no leading dot).
    Domain(String),
    /// An address, or a range of them (`bits` leading bits compared).
    Net(IpAddr, u8),
}

/// The `no_proxy` list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NoProxy {
    entries: Vec<Entry>,
    /// `<-loopback>`: loopback goes through the proxy too.
    proxy_loopback: bool,
}

impl NoProxy {
    /// Parses a `no_proxy` value (see the module docs). Entries that are neither names nor
    /// addresses are skipped.
    pub(crate) fn parse(text: &str) -> NoProxy {
        let mut out = NoProxy::default();
        for raw in text.split(',') {
            let entry = raw.trim();
            if entry.is_empty() {
                continue;
            }
            if entry.eq_ignore_ascii_case("<-loopback>") {
                out.proxy_loopback = true;
                continue;
            }
            if entry == "*" {
                out.entries.push(Entry::All);
                continue;
            }
            if let Some(net) = parse_net(entry) {
                out.entries.push(net);
                continue;
            }
            let name = entry.strip_prefix("*.").unwrap_or(entry);
            let name = name.trim_start_matches('.');
            // A trailing `:port` is not matched (as in curl).
            let name = match name.rsplit_once(':') {
                Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
                _ => name,
            };
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if !name.is_empty() && !name.contains(['/', '*', ' ']) {
                out.entries.push(Entry::Domain(name));
            }
        }
        out
    }

    /// Whether `host` (a name, or an address with IPv6 in brackets or not) is reached directly.
    pub(crate) fn matches(&self, host: &str) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let ip: Option<IpAddr> = host.parse().ok();
        self.entries.iter().any(|entry| match (entry, ip) {
            (Entry::All, _) => true,
            (Entry::Net(net, bits), Some(ip)) => in_net(ip, *net, *bits),
            (Entry::Domain(name), None) => {
                host == *name
                    || (host.len() > name.len()
                        && host.ends_with(name.as_str())
                        && host.as_bytes()[host.len() - name.len() - 1] == b'.')
            }
            _ => false,
        })
    }
}

/// `addr` or `addr/bits`.
fn parse_net(entry: &str) -> Option<Entry> {
    let (addr, bits) = match entry.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits.parse::<u8>().ok()?)),
        None => (entry, None),
    };
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some(Entry::Net(ip, bits))
}

/// Whether `ip` is in `net/bits` (an IPv4-mapped IPv6 address counts as its IPv4 one).
fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let unmap = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match (unmap(ip), unmap(net)) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// Whether `host` is this machine: `localhost`, a name under it, `127.0.0.0/8`, `::1`.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.is_loopback(),
        Ok(IpAddr::V6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

/// The proxies of the environment, read once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProxyEnv {
    https: Option<ProxyUrl>,
    http: Option<ProxyUrl>,
    all: Option<ProxyUrl>,
    no_proxy: NoProxy,
    /// Variables whose value is not a proxy URL: `(name, why)`, for a warning.
    pub(crate) invalid: Vec<(&'static str, String)>,
}

impl ProxyEnv {
    /// Reads the variables through `get` (the process environment in production).
    pub(crate) fn read(get: impl Fn(&str) -> Option<String>) -> ProxyEnv {
        let mut out = ProxyEnv::default();
        let var = |names: &[&'static str]| -> Option<(&'static str, String)> {
            names.iter().find_map(|name| {
                get(name)
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .map(|v| (*name, v))
            })
        };
        let mut url = |names: &[&'static str]| -> Option<ProxyUrl> {
            let (name, value) = var(names)?;
            match ProxyUrl::parse(&value) {
                Ok(url) => Some(url),
                Err(why) => {
                    out.invalid.push((name, why));
                    None
                }
            }
        };
        let https = url(&["https_proxy", "HTTPS_PROXY"]);
        let http = url(&["http_proxy"]);
        let all = url(&["all_proxy", "ALL_PROXY"]);
        out.https = https;
        out.http = http;
        out.all = all;
        out.no_proxy = var(&["no_proxy", "NO_PROXY"])
            .map(|(_, v)| NoProxy::parse(&v))
            .unwrap_or_default();
        out
    }

    /// The process's environment.
    pub(crate) fn from_process() -> ProxyEnv {
        ProxyEnv::read(|name| std::env::var(name).ok())
    }

    /// The proxy for a request to `scheme://host`, or `None` to connect directly.
    pub(crate) fn choose(&self, scheme: &str, host: &str) -> Option<&ProxyUrl> {
        let proxy = match scheme {
            "https" => self.https.as_ref().or(self.all.as_ref()),
            "http" => self.http.as_ref().or(self.all.as_ref()),
            _ => None,
        }?;
        (!self.bypasses(host)).then_some(proxy)
    }

    /// Whether `host` is reached directly whatever the proxy: `no_proxy` names it, or it is a
    /// loopback host (unless `no_proxy` has `<-loopback>`).
    pub(crate) fn bypasses(&self, host: &str) -> bool {
        self.no_proxy.matches(host) || (is_loopback(host) && !self.no_proxy.proxy_loopback)
    }
}

// The settings, turned into the proxy of one connection.

/// A proxy setting as `Debug` shows it: without credentials.
pub(crate) fn shown(setting: &Option<String>) -> Option<String> {
    setting.as_deref().map(|p| match ProxyUrl::parse(p) {
        _ if p.trim().eq_ignore_ascii_case("direct") => "direct".to_owned(),
        Ok(url) => url.redacted().to_owned(),
        Err(_) => "<not a proxy URL>".to_owned(),
    })
}

/// A proxy as we show it and as `ureq` connects through it.
#[derive(Clone)]
pub(crate) struct Proxy {
    pub(crate) url: ProxyUrl,
    pub(crate) ureq: ureq::Proxy,
}

impl Proxy {
    /// Whether requests to a `target_scheme` server are sent to this proxy as they are, with
    /// the absolute URL as their target (plain http through an http proxy: what proxies
    /// expect, and many refuse a `CONNECT` to port 80), rather than through a `CONNECT` tunnel.
    pub(crate) fn forwards(&self, target_scheme: &str) -> bool {
        target_scheme.eq_ignore_ascii_case("http")
            && self.ureq.protocol() == ureq::ProxyProtocol::Http
    }

    /// `Proxy-Authorization: Basic ...\r\n` for the proxy's credentials, if it has any.
    ///
    /// (The proxy's address, without them, is [`address`].)
    pub(crate) fn authorization_line(&self) -> Option<Vec<u8>> {
        use base64::Engine as _;
        let (user, password) = (self.ureq.username(), self.ureq.password());
        if user.is_none() && password.is_none() {
            return None;
        }
        let pair = format!("{}:{}", user.unwrap_or(""), password.unwrap_or(""));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        Some(format!("Proxy-Authorization: Basic {encoded}\r\n").into_bytes())
    }
}

/// The proxy's address as a URI (`http://host:port`, never its credentials), where forwarded
/// requests are sent.
pub(crate) fn address(proxy: &ureq::Proxy) -> Option<ureq::http::Uri> {
    let host = proxy.host().trim_start_matches('[').trim_end_matches(']');
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    format!("http://{host}:{}", proxy.port()).parse().ok()
}

/// A proxy setting: `Ok(None)` for `direct`, the proxy, or what is wrong with it (never its
/// value: it may hold credentials).
fn proxy_setting(setting: &str, whose: &str) -> Result<Option<Proxy>, Error> {
    if setting.trim().eq_ignore_ascii_case("direct") {
        return Ok(None);
    }
    let bad = |why: String| Error::Config {
        message: format!("{whose} proxy is not a proxy URL: {why}"),
    };
    let url = ProxyUrl::parse(setting).map_err(bad)?;
    let ureq = ureq::Proxy::new(url.expose())
        .map_err(|_| bad(format!("{} cannot be parsed", url.redacted())))?;
    Ok(Some(Proxy { url, ureq }))
}

/// The proxy of a connection to `target`: the target's own setting (used for any host), else
/// the options' one, else the environment's (both following the environment's `no_proxy`, and
/// reaching loopback hosts directly: see the module docs).
pub(crate) fn choose(
    target: &HttpTarget,
    options: &HttpOptions,
    env: &ProxyEnv,
) -> Result<Option<Proxy>, Error> {
    if let Some(setting) = &target.proxy {
        return proxy_setting(setting, "the server's");
    }
    for (name, why) in &env.invalid {
        log::warn!("{name} is not used: {why}");
    }
    let uri: ureq::http::Uri = match target.url.parse() {
        Ok(uri) => uri,
        Err(_) => return Ok(None),
    };
    let (scheme, host) = (uri.scheme_str().unwrap_or(""), uri.host().unwrap_or(""));
    if let Some(setting) = &options.proxy {
        let proxy = proxy_setting(setting, "the HTTP options'")?;
        return Ok(proxy.filter(|_| !env.bypasses(host)));
    }
    match env.choose(scheme, host) {
        Some(url) => proxy_setting(url.expose(), "the environment's"),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxys_credentials_become_its_authorization() {
        let proxy = ProxyUrl::parse("http://us%40er:p%3Ass@proxy:3128").unwrap();
        assert_eq!(
            proxy.authorization_line().unwrap(),
            "Proxy-Authorization: Basic dXNAZXI6cDpzcw==\r\n"
        );
        assert_eq!(
            ProxyUrl::parse("proxy:3128").unwrap().authorization_line(),
            None
        );
    }

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ProxyEnv::read(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn chosen(e: &ProxyEnv, scheme: &str, host: &str) -> Option<String> {
        e.choose(scheme, host).map(|p| p.redacted().to_owned())
    }

    #[test]
    fn a_proxys_address_has_no_credentials() {
        let p = ureq::Proxy::new("http://me:pw@[::1]:3128").unwrap();
        assert_eq!(address(&p).unwrap().to_string(), "http://[::1]:3128/");
        let p = ureq::Proxy::new("http://me:pw@proxy.corp:3128").unwrap();
        assert_eq!(address(&p).unwrap().to_string(), "http://proxy.corp:3128/");
    }

    #[test]
    fn each_scheme_has_its_variable_and_all_proxy_is_the_fallback() {
        let e = env(&[
            ("HTTPS_PROXY", "http://secure:3128"),
            ("http_proxy", "plain:8080"),
            ("ALL_PROXY", "http://all:1"),
        ]);
        assert_eq!(
            chosen(&e, "https", "api.example.com").as_deref(),
            Some("http://secure:3128")
        );
        assert_eq!(
            chosen(&e, "http", "api.example.com").as_deref(),
            Some("http://plain:8080")
        );
        let only_all = env(&[("all_proxy", "http://all:1")]);
        assert_eq!(
            chosen(&only_all, "https", "x.test").as_deref(),
            Some("http://all:1")
        );
        assert_eq!(
            chosen(&only_all, "http", "x.test").as_deref(),
            Some("http://all:1")
        );
        assert_eq!(chosen(&env(&[]), "https", "x.test"), None);
    }

    #[test]
    fn uppercase_http_proxy_is_ignored_and_lowercase_wins() {
        // httpoxy: a CGI request's `Proxy:` header arrives as HTTP_PROXY.
        let e = env(&[("HTTP_PROXY", "http://attacker:1")]);
        assert_eq!(chosen(&e, "http", "x.test"), None);
        let both = env(&[
            ("https_proxy", "http://lower:1"),
            ("HTTPS_PROXY", "http://upper:1"),
        ]);
        assert_eq!(
            chosen(&both, "https", "x.test").as_deref(),
            Some("http://lower:1")
        );
        let empty = env(&[("https_proxy", " "), ("HTTPS_PROXY", "http://upper:1")]);
        assert_eq!(
            chosen(&empty, "https", "x.test").as_deref(),
            Some("http://upper:1")
        );
    }

    #[test]
    fn no_proxy_matches_names_and_the_names_under_them() {
        let n = NoProxy::parse(" example.com, .corp.test ,*.internal, host:8080,");
        for direct in [
            "example.com",
            "API.Example.com",
            "a.b.example.com",
            "corp.test",
            "x.corp.test",
            "internal",
            "svc.internal",
            "host",
            "example.com.",
        ] {
            assert!(n.matches(direct), "{direct}");
        }
        for proxied in [
            "badexample.com",
            "example.com.evil",
            "xcorp.test",
            "hostile",
            "com",
        ] {
            assert!(!n.matches(proxied), "{proxied}");
        }
        assert!(NoProxy::parse("*").matches("anything.at.all"));
        assert!(!NoProxy::parse("").matches("x"));
    }

    #[test]
    fn no_proxy_matches_addresses_and_ranges() {
        let n = NoProxy::parse("10.0.0.0/8,192.168.1.7,fd00::/8,[2001:db8::1],172.16.0.0/33");
        for direct in [
            "10.1.2.3",
            "192.168.1.7",
            "fd12::1",
            "[fd12::1]",
            "2001:db8::1",
            "::ffff:10.9.9.9",
        ] {
            assert!(n.matches(direct), "{direct}");
        }
        for proxied in [
            "11.0.0.1",
            "192.168.1.8",
            "fe80::1",
            "172.16.0.1",
            "ten.example",
        ] {
            assert!(!n.matches(proxied), "{proxied}");
        }
        // A name never matches an address entry, nor an address a name entry.
        assert!(!NoProxy::parse("10.0.0.1").matches("10.0.0.1.example.com"));
        assert!(NoProxy::parse("0.0.0.0/0").matches("8.8.8.8"));
    }

    #[test]
    fn loopback_is_direct_unless_no_proxy_takes_the_rule_back() {
        let e = env(&[("HTTPS_PROXY", "http://p:1"), ("http_proxy", "http://p:1")]);
        for host in [
            "localhost",
            "LOCALHOST",
            "api.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
        ] {
            assert_eq!(chosen(&e, "https", host), None, "{host}");
        }
        assert!(chosen(&e, "http", "localhost.example.com").is_some());
        let back = env(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", "<-loopback>")]);
        assert!(chosen(&back, "https", "127.0.0.1").is_some());
        assert!(chosen(&back, "https", "localhost").is_some());
        let both = env(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "<-loopback>,127.0.0.1"),
        ]);
        assert_eq!(chosen(&both, "https", "127.0.0.1"), None);
        assert!(chosen(&both, "https", "127.0.0.2").is_some());
    }

    #[test]
    fn proxy_urls_keep_their_credentials_out_of_sight() {
        let p = ProxyUrl::parse("http://user:s3cr%40t@proxy.corp:3128/").unwrap();
        assert_eq!(p.expose(), "http://user:s3cr%40t@proxy.corp:3128");
        assert_eq!(p.redacted(), "http://proxy.corp:3128");
        assert_eq!(format!("{p:?}"), "http://proxy.corp:3128");
        assert_eq!(
            ProxyUrl::parse("proxy:8080").unwrap().redacted(),
            "http://proxy:8080"
        );
        assert_eq!(
            ProxyUrl::parse("HTTPS://p:1").unwrap().redacted(),
            "https://p:1"
        );
        for bad in [
            "socks5://p:1",
            "ftp://p",
            "http://",
            "http://p:1/path",
            "http://u:p@",
            "http://:1",
        ] {
            assert!(ProxyUrl::parse(bad).is_err(), "{bad}");
        }
        let e = env(&[("HTTPS_PROXY", "socks5://p:1")]);
        assert_eq!(chosen(&e, "https", "x.test"), None);
        assert_eq!(e.invalid.len(), 1);
        assert_eq!(e.invalid[0].0, "HTTPS_PROXY");
        assert!(!format!("{e:?}").contains("s3cr"));
    }
}
