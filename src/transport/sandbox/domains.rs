//! Which host names a sandboxed server may reach: `allowedDomains` less `deniedDomains`, with
//! `*.example.com` matching every name under `example.com` but not `example.com` itself (as
//! VS Code and sandbox-runtime read them). Names compare without case and without a trailing
//! dot; an address is a name like any other (`127.0.0.1` matches only `127.0.0.1`).

/// A host name as compared: lower case, no trailing dot, no IPv6 brackets.
fn normal(host: &str) -> String {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `host` matches the pattern `pattern` (`name` or `*.name`).
fn matches(pattern: &str, host: &str) -> bool {
    let pattern = normal(pattern);
    match pattern.strip_prefix("*.") {
        Some(parent) => {
            host.len() > parent.len() + 1
                && host.ends_with(parent)
                && host.as_bytes()[host.len() - parent.len() - 1] == b'.'
        }
        None => !pattern.is_empty() && pattern == host,
    }
}

/// Whether a server with these lists may reach `host`.
pub(crate) fn allowed(allowed: &[String], denied: &[String], host: &str) -> bool {
    let host = normal(host);
    !host.is_empty()
        && allowed.iter().any(|p| matches(p, &host))
        && !denied.iter().any(|p| matches(p, &host))
}

/// Why a domain pattern cannot be used, or `None` when it can.
pub(crate) fn invalid(pattern: &str) -> Option<&'static str> {
    let name = normal(pattern);
    let name = name.strip_prefix("*.").unwrap_or(&name);
    if name.is_empty() {
        Some("an empty domain")
    } else if name.contains('*') {
        Some("a wildcard other than a leading \"*.\"")
    } else if name.contains(['/', ':', ' ', '@']) && name.parse::<std::net::Ipv6Addr>().is_err() {
        Some("not a host name (no scheme, port or path)")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_wildcard_covers_the_names_under_it_and_denied_wins() {
        let allow = list(&["*.example.com", "api.other.org", "127.0.0.1"]);
        let deny = list(&["bad.example.com"]);
        for (host, ok) in [
            ("a.example.com", true),
            ("A.B.Example.COM.", true),
            ("example.com", false),
            ("badexample.com", false),
            ("bad.example.com", false),
            ("api.other.org", true),
            ("x.api.other.org", false),
            ("127.0.0.1", true),
            ("127.0.0.2", false),
            ("", false),
        ] {
            assert_eq!(allowed(&allow, &deny, host), ok, "{host}");
        }
        assert!(!allowed(&[], &[], "example.com"), "no list: no network");
    }

    #[test]
    fn patterns_that_cannot_be_matched_are_named() {
        assert_eq!(invalid("*.example.com"), None);
        assert_eq!(invalid("::1"), None);
        assert!(invalid("https://example.com").is_some());
        assert!(invalid("example.com:443").is_some());
        assert!(invalid("a.*.com").is_some());
        assert!(invalid("*.").is_some());
    }
}
