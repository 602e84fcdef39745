//! A stdio server in an operating-system sandbox: what it may read, write and reach,
//! enforced by the kernel for the server and every process it starts.
//!
//! The rules ([`Sandbox`]) are VS Code's (`sandboxEnabled` and `sandbox` in `mcp.json`): the
//! server may read everything but what [`Sandbox::deny_read`] names, write only under
//! [`Sandbox::allow_write`] (less [`Sandbox::deny_write`]) and in a private temporary directory
//! of its own, and reach only [`Sandbox::allowed_domains`] (less
//! [`Sandbox::denied_domains`]), through a proxy of ours. Its environment is a small default set
//! plus its config's `env`, so the user's shell tokens do not travel with it.
//!
//! On Linux (see `linux`): Landlock for the files, a user and network namespace with no route
//! out, a seccomp filter that refuses new Unix sockets (a path such as `$SSH_AUTH_SOCK` is
//! reachable through any read-only view of the file system), and the filtering proxy (see
//! `proxy`) listening inside the namespace. No helper program, no set-user-id binary: the
//! steps run in the server's process between `fork` and `exec`, so it stays in our process
//! group and every teardown guarantee holds. On macOS a Seatbelt profile (`seatbelt`) is
//! generated from the same rules. Elsewhere, and wherever a part is missing (a kernel without
//! Landlock, user namespaces turned off), a server that asks for the sandbox does not start:
//! [`Error::Sandbox`](crate::Error::Sandbox) names what is missing. It never runs unconfined.

use std::path::PathBuf;

// The proxy's and the spawn's parts: unused where no sandbox runs (Windows).
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) mod domains;
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) mod env;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod proxy;
#[cfg(target_os = "linux")]
mod seccomp;
// Generated and unit-tested everywhere; run only on macOS.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) mod seatbelt;
mod spawn;

pub(crate) use spawn::{prepare, Guard};

#[cfg(target_os = "linux")]
/// The port the filtering proxy listens on inside a Linux server's network namespace (a fresh
/// namespace: nothing else can hold it).
pub(crate) const PROXY_PORT: u16 = 3128;

/// What a sandboxed server may reach. Paths are absolute (the config layer resolves
/// `${workspaceFolder}`, `${userHome}` and `~`); a domain is a host name, `*.example.com`
/// matching every name under `example.com` (not `example.com` itself).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// Trees the server may write (create, change, delete) in, besides its temporary directory.
    pub allow_write: Vec<PathBuf>,
    /// Files and trees the server may not read (nor write). Everything else is readable.
    pub deny_read: Vec<PathBuf>,
    /// Files and trees under `allow_write` the server may still not write.
    pub deny_write: Vec<PathBuf>,
    /// Host names the server may connect to, through the proxy; none: no network at all.
    pub allowed_domains: Vec<String>,
    /// Host names refused even when `allowed_domains` matches them.
    pub denied_domains: Vec<String>,
}

impl Sandbox {
    /// The rules in words, one line each, for a status display or an approval.
    pub fn describe(&self) -> Vec<String> {
        let list = |items: &[PathBuf]| {
            let shown: Vec<String> = items.iter().map(|p| p.display().to_string()).collect();
            shown.join(", ")
        };
        let mut lines = vec!["reads: everything but what deny-read names".to_owned()];
        if !self.deny_read.is_empty() {
            lines.push(format!("deny-read: {}", list(&self.deny_read)));
        }
        lines.push(if self.allow_write.is_empty() {
            "writes: only its own temporary directory".to_owned()
        } else {
            format!(
                "writes: {} and its own temporary directory",
                list(&self.allow_write)
            )
        });
        if !self.deny_write.is_empty() {
            lines.push(format!("deny-write: {}", list(&self.deny_write)));
        }
        lines.push(if self.allowed_domains.is_empty() {
            "network: none".to_owned()
        } else {
            format!(
                "network: {} (through a proxy)",
                self.allowed_domains.join(", ")
            )
        });
        if !self.denied_domains.is_empty() {
            lines.push(format!(
                "denied domains: {}",
                self.denied_domains.join(", ")
            ));
        }
        lines
    }
}

/// Whether this machine can confine a server, or what is missing. Checked once per process
/// (the answer does not change while it runs).
pub(crate) fn unavailable() -> Option<String> {
    #[cfg(feature = "fault-injection")]
    if let Ok(missing) = std::env::var("MCP_RUNTIME_TEST_SANDBOX_MISSING") {
        return Some(format!("{missing} (reported absent by the test)"));
    }
    #[cfg(target_os = "linux")]
    {
        static PROBE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        PROBE.get_or_init(linux::probe).clone()
    }
    #[cfg(target_os = "macos")]
    {
        (!std::path::Path::new(seatbelt::SANDBOX_EXEC).exists())
            .then(|| format!("{} is missing", seatbelt::SANDBOX_EXEC))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Some("the sandbox runs only on Linux and macOS".to_owned())
    }
}
