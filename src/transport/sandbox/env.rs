//! A sandboxed server's environment: a default set taken from ours, its config's `env` on top,
//! its own temporary directory, and the proxy. Nothing else of ours travels: the user's shell
//! tokens (`GITHUB_TOKEN`, cloud keys, `SSH_AUTH_SOCK`) would otherwise go wherever an allowed
//! domain leads.

use std::path::Path;

/// The variables taken from our environment when set: what programs need to find themselves,
/// their user and their language (the set the MCP SDKs pass to a server by default, plus the
/// locale and time zone).
pub(crate) const DEFAULT_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
];

/// The proxy variables a sandboxed server with network gets (curl, Python, Go and Node 24
/// with `NODE_USE_ENV_PROXY` read them).
const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// The whole environment of a sandboxed server: the defaults `ours` has, then `configured`,
/// then its temporary directory and (with `proxy`, the proxy's URL) the proxy, which the
/// config cannot override.
pub(crate) fn environment(
    ours: impl Fn(&str) -> Option<String>,
    configured: &[(String, String)],
    temp: &Path,
    proxy: Option<&str>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = DEFAULT_VARIABLES
        .iter()
        .filter_map(|name| ours(name).map(|v| ((*name).to_owned(), v)))
        .collect();
    fn set(out: &mut Vec<(String, String)>, name: &str, value: String) {
        out.retain(|(n, _)| n != name);
        out.push((name.to_owned(), value));
    }
    for (name, value) in configured {
        set(&mut out, name, value.clone());
    }
    let temp = temp.display().to_string();
    for name in ["TMPDIR", "TMP", "TEMP"] {
        set(&mut out, name, temp.clone());
    }
    for name in PROXY_VARIABLES {
        match proxy {
            Some(url) => set(&mut out, name, url.to_owned()),
            None => out.retain(|(n, _)| n != *name),
        }
    }
    if proxy.is_some() {
        for name in ["NO_PROXY", "no_proxy"] {
            set(&mut out, name, "localhost,127.0.0.1,::1".to_owned());
        }
        set(&mut out, "NODE_USE_ENV_PROXY", "1".to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_defaults_and_the_config_travel() {
        let ours = |name: &str| match name {
            "PATH" => Some("/usr/bin".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            "GITHUB_TOKEN" | "SSH_AUTH_SOCK" => Some("secret".to_owned()),
            _ => None,
        };
        let configured = vec![
            ("API_KEY".to_owned(), "k".to_owned()),
            ("HTTPS_PROXY".to_owned(), "http://elsewhere:1".to_owned()),
        ];
        let env = environment(ours, &configured, Path::new("/tmp/t"), Some("http://p"));
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some("/usr/bin"));
        assert_eq!(get("API_KEY"), Some("k"));
        assert_eq!(get("GITHUB_TOKEN"), None);
        assert_eq!(get("SSH_AUTH_SOCK"), None);
        assert_eq!(get("TMPDIR"), Some("/tmp/t"));
        assert_eq!(
            get("HTTPS_PROXY"),
            Some("http://p"),
            "ours, not the config's"
        );
        let none = environment(ours, &configured, Path::new("/tmp/t"), None);
        assert!(!none.iter().any(|(k, _)| k == "HTTPS_PROXY"));
    }
}
