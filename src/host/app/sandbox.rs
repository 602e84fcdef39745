//! What a host must apply around an App's page, as data: the content security policy built from
//! the page's `_meta.ui.csp` (the extension's restrictive default when it declares none), the
//! frame's `sandbox` and `allow` attributes, the page with its policy written into it, and the
//! sandbox proxy page a web host serves on an origin of its own.

use serde_json::{json, Map, Value};

use crate::protocol::{ResourceUi, UiCsp};

/// The `sandbox` attribute of the frame the View runs in (inside the sandbox proxy, whose own
/// origin is not the host's).
pub const VIEW_SANDBOX: &str = "allow-scripts allow-same-origin allow-forms";

/// The sandbox proxy: the page a web host loads, from an origin other than its own, in a frame
/// with `allow-scripts allow-same-origin`, served with [`AppBridge::csp`](super::AppBridge::csp) as its
/// `Content-Security-Policy` header (the View's frame inherits it, beside the copy written into
/// the page) and a `frame-ancestors` naming the host. It refuses to run without a referrer (it
/// answers only the page that framed it). It tells its parent
/// `ui/notifications/sandbox-proxy-ready`, loads the page the parent sends in
/// `ui/notifications/sandbox-resource-ready` (from [`AppBridge`](super::AppBridge), its policy
/// already written into it) into an inner frame, and relays every other message between the
/// parent and the View. Messages from any other window are ignored.
pub const APP_SANDBOX_PROXY_HTML: &str = include_str!("sandbox_proxy.html");

/// How a host frames an App's page: the policy, the attributes and the page to load.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AppSandbox {
    /// The `Content-Security-Policy` (for a header, and already in [`AppSandbox::html`]).
    pub csp: String,
    /// The View's frame's `sandbox` attribute.
    pub frame_sandbox: &'static str,
    /// The View's frame's `allow` attribute: the browser permissions both asked for and
    /// granted (`camera`, `microphone`, `geolocation`, `clipboard-write`), `;`-separated.
    pub frame_allow: String,
    /// The page, with a `<meta http-equiv="Content-Security-Policy">` before anything else.
    pub html: String,
}

/// The origins a page may name, kept when they are plain sources: `http`, `https`, `ws` or
/// `wss`, a host (a leading `*.` allowed), an optional port and path; never a keyword, a bare
/// `*`, a quote, a `;`, a `,` or white space (which would let a server write directives of its
/// own into the policy).
pub(crate) fn allowed_origins(csp: &UiCsp) -> UiCsp {
    let keep = |list: &[String]| -> Vec<String> {
        let kept: Vec<String> = list
            .iter()
            .filter(|s| is_plain_source(s))
            .cloned()
            .collect();
        if kept.len() < list.len() {
            log::warn!(
                "an App's page named {} origin(s) that are not plain sources; they are left out",
                list.len() - kept.len()
            );
        }
        kept
    };
    UiCsp {
        connect_domains: keep(&csp.connect_domains),
        resource_domains: keep(&csp.resource_domains),
        frame_domains: keep(&csp.frame_domains),
        base_uri_domains: keep(&csp.base_uri_domains),
    }
}

fn is_plain_source(source: &str) -> bool {
    let Some((scheme, rest)) = source.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https" | "ws" | "wss") || rest.is_empty() {
        return false;
    }
    let host = rest.split(['/', ':']).next().unwrap_or("");
    let host_ok = {
        let bare = host.strip_prefix("*.").unwrap_or(host);
        !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    host_ok
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~%/:*".contains(c))
}

/// The policy for a page that says `ui` of itself (see the module docs).
pub(crate) fn content_security_policy(ui: Option<&ResourceUi>) -> String {
    let Some(csp) = ui.and_then(|u| u.csp.as_ref()) else {
        return "default-src 'none'; script-src 'self' 'unsafe-inline'; \
                style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; \
                connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'"
            .to_owned();
    };
    let csp = allowed_origins(csp);
    let with = |fixed: &str, list: &[String]| {
        let mut out = fixed.to_owned();
        for s in list {
            out.push(' ');
            out.push_str(s);
        }
        out
    };
    let or_none = |list: &[String], none: &str| {
        if list.is_empty() {
            none.to_owned()
        } else {
            list.join(" ")
        }
    };
    let r = &csp.resource_domains;
    [
        "default-src 'none'".to_owned(),
        with("script-src 'self' 'unsafe-inline'", r),
        with("style-src 'self' 'unsafe-inline'", r),
        with("img-src 'self' data:", r),
        with("font-src 'self'", r),
        with("media-src 'self' data:", r),
        format!("connect-src {}", or_none(&csp.connect_domains, "'none'")),
        format!("frame-src {}", or_none(&csp.frame_domains, "'none'")),
        "object-src 'none'".to_owned(),
        format!("base-uri {}", or_none(&csp.base_uri_domains, "'self'")),
    ]
    .join("; ")
}

/// The browser permissions the page asks for that the host grants, as `_meta.ui.permissions`
/// names them (`camera`, `microphone`, `geolocation`, `clipboardWrite`).
pub(crate) fn granted_permissions(
    ui: Option<&ResourceUi>,
    granted: &[String],
) -> Map<String, Value> {
    let asked = ui
        .and_then(|u| u.permissions.as_ref())
        .and_then(Value::as_object);
    let mut out = Map::new();
    for name in ["camera", "microphone", "geolocation", "clipboardWrite"] {
        if asked.is_some_and(|a| a.contains_key(name)) && granted.iter().any(|g| g == name) {
            out.insert(name.to_owned(), json!({}));
        }
    }
    out
}

/// The `allow` attribute for granted permissions.
pub(crate) fn allow_attribute(granted: &Map<String, Value>) -> String {
    granted
        .keys()
        .map(|k| match k.as_str() {
            "clipboardWrite" => "clipboard-write",
            other => other,
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `html` with a `<meta http-equiv="Content-Security-Policy">` for `policy` before anything
/// else in it (after a leading doctype, which must stay first): the parser puts it in the
/// head, before any script can run, wherever the page's own `<head>` is.
pub(crate) fn with_policy(html: &str, policy: &str) -> String {
    let meta = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        policy.replace('&', "&amp;").replace('"', "&quot;")
    );
    let lead = html.len() - html.trim_start().len();
    let at = if html[lead..]
        .get(..9)
        .is_some_and(|s| s.eq_ignore_ascii_case("<!doctype"))
    {
        html[lead..].find('>').map_or(0, |end| lead + end + 1)
    } else {
        0
    };
    let mut out = String::with_capacity(html.len() + meta.len());
    out.push_str(&html[..at]);
    out.push_str(&meta);
    out.push_str(&html[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ui(csp: Value) -> ResourceUi {
        ResourceUi::from_meta(Some(&json!({"ui": {"csp": csp}}))).unwrap()
    }

    #[test]
    fn a_page_that_declares_nothing_gets_the_restrictive_default() {
        let policy = content_security_policy(None);
        assert!(policy.starts_with("default-src 'none'; script-src 'self' 'unsafe-inline'"));
        assert!(policy.contains("connect-src 'none'"));
        assert!(policy.contains("frame-src 'none'"));
        assert!(policy.contains("object-src 'none'"));
        assert!(policy.contains("base-uri 'self'"));
    }

    #[test]
    fn declared_origins_go_where_the_extension_says() {
        let policy = content_security_policy(Some(&ui(json!({
            "connectDomains": ["https://api.example.com", "wss://live.example.com"],
            "resourceDomains": ["https://*.cdn.example.com"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example.com"],
        }))));
        assert!(policy.contains("connect-src https://api.example.com wss://live.example.com;"));
        assert!(policy.contains("script-src 'self' 'unsafe-inline' https://*.cdn.example.com;"));
        assert!(policy.contains("img-src 'self' data: https://*.cdn.example.com;"));
        assert!(policy.contains("frame-src https://www.youtube.com;"));
        assert!(policy.ends_with("base-uri https://base.example.com"));
    }

    #[test]
    fn a_server_cannot_write_directives_of_its_own() {
        let policy = content_security_policy(Some(&ui(json!({
            "connectDomains": ["https://ok.example.com; script-src *", "*", "'unsafe-eval'",
                               "https://a.example.com https://b.example.com", "javascript:x",
                               "https://*", "data:", "https://ok2.example.com:8443/api"],
        }))));
        assert!(
            policy.contains("connect-src https://ok2.example.com:8443/api;"),
            "{policy}"
        );
        assert!(!policy.contains("unsafe-eval"));
        assert!(!policy.contains("script-src *"));
    }

    #[test]
    fn the_policy_goes_before_anything_but_the_doctype() {
        let p = "default-src 'none'";
        let meta = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">";
        assert_eq!(
            with_policy("<!DOCTYPE html><html><head><title>t</title>", p),
            format!("<!DOCTYPE html>{meta}<html><head><title>t</title>")
        );
        assert_eq!(
            with_policy("\n <!doctype html>\n<script>x='<head>'</script><head>", p),
            format!("\n <!doctype html>{meta}\n<script>x='<head>'</script><head>")
        );
        assert_eq!(with_policy("<p>hi", p), format!("{meta}<p>hi"));
        assert_eq!(with_policy("", p), meta);
        assert!(with_policy("<head>", "a\"b&").contains("content=\"a&quot;b&amp;\""));
    }

    #[test]
    fn only_permissions_asked_for_and_granted_are_allowed() {
        let page = ResourceUi::from_meta(Some(&json!({"ui": {"permissions":
            {"camera": {}, "clipboardWrite": {}}}})))
        .unwrap();
        let granted =
            granted_permissions(Some(&page), &["clipboardWrite".into(), "microphone".into()]);
        assert_eq!(allow_attribute(&granted), "clipboard-write");
        assert!(granted_permissions(None, &["camera".into()]).is_empty());
    }
}
