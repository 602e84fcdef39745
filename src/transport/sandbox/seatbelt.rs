//! macOS: the sandbox as a Seatbelt profile for `sandbox-exec -p`, generated from the same
//! rules. Reads are allowed but for `deny_read`; writes only under `allow_write` (less
//! `deny_write` and `deny_read`), the temporary directory and `/dev/null`; the network only to
//! the proxy on `127.0.0.1` (which filters by domain); no Unix socket; signals only within the
//! sandbox. Generated and unit-tested on every system; these machines cannot run it.

use std::path::{Path, PathBuf};

/// The program that applies a profile.
pub(crate) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A path as a profile's string literal.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `(subpath "...")` for each path.
fn subpaths(paths: &[PathBuf]) -> String {
    let items: Vec<String> = (paths.iter())
        .map(|p| format!("(subpath {})", quoted(p)))
        .collect();
    items.join(" ")
}

/// The profile for `rules`, with its temporary directory `temp` and (for a server with
/// network) the proxy's port on loopback.
pub(crate) fn profile(rules: &super::Sandbox, temp: &Path, proxy_port: Option<u16>) -> String {
    let mut p = String::from(
        "(version 1)\n(deny default)\n\
         (allow process-exec)\n(allow process-fork)\n\
         (allow signal (target same-sandbox))\n\
         (allow sysctl-read)\n(allow mach-lookup)\n(allow ipc-posix-shm)\n\
         (allow file-read*)\n",
    );
    if !rules.deny_read.is_empty() {
        p.push_str(&format!(
            "(deny file-read* {})\n",
            subpaths(&rules.deny_read)
        ));
    }
    let mut writable = rules.allow_write.clone();
    writable.push(temp.to_path_buf());
    p.push_str(&format!(
        "(allow file-write* {} (literal \"/dev/null\"))\n",
        subpaths(&writable)
    ));
    let mut unwritable = rules.deny_write.clone();
    unwritable.extend(rules.deny_read.iter().cloned());
    if !unwritable.is_empty() {
        p.push_str(&format!("(deny file-write* {})\n", subpaths(&unwritable)));
    }
    if let Some(port) = proxy_port {
        p.push_str(&format!(
            "(allow network-outbound (remote ip \"localhost:{port}\"))\n"
        ));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::sandbox::Sandbox;

    #[test]
    fn the_profile_says_what_the_rules_say() {
        let rules = Sandbox {
            allow_write: vec!["/work/p".into()],
            deny_read: vec!["/Users/u/.ssh".into()],
            deny_write: vec!["/work/p/.git".into()],
            allowed_domains: vec!["*.example.com".into()],
            denied_domains: vec![],
        };
        let p = profile(&rules, Path::new("/tmp/t \"x\""), Some(40123));
        assert!(p.starts_with("(version 1)\n(deny default)\n"));
        assert!(p.contains("(deny file-read* (subpath \"/Users/u/.ssh\"))"));
        assert!(p.contains(
            "(allow file-write* (subpath \"/work/p\") (subpath \"/tmp/t \\\"x\\\"\") (literal \"/dev/null\"))"
        ));
        assert!(
            p.contains("(deny file-write* (subpath \"/work/p/.git\") (subpath \"/Users/u/.ssh\"))")
        );
        assert!(p.contains("(allow network-outbound (remote ip \"localhost:40123\"))"));
        assert!(!p.contains("network*"), "no other network rule: {p}");
        let offline = profile(&Sandbox::default(), Path::new("/tmp/t"), None);
        assert!(!offline.contains("network"), "no network without a proxy");
        assert!(!offline.contains("deny file-read*"));
    }
}
