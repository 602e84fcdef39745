//! A sandboxed spawn in three steps: [`prepare`] (before the process: the private temporary
//! directory, the environment, the kernel rules, the proxy's listener), [`Confined::command`]
//! (the `Command` that runs the server confined), and [`Confined::started`] (after the spawn:
//! the proxy starts). Dropping the [`Guard`] that comes out, once the server's teardown is done,
//! stops the proxy and removes the temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Sandbox;

/// A sandboxed server about to start.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) struct Confined {
    server: String,
    rules: Sandbox,
    temp: PathBuf,
    env: Vec<(String, String)>,
    #[cfg(target_os = "linux")]
    plan: std::sync::Arc<super::linux::Plan>,
    #[cfg(target_os = "linux")]
    from: Option<super::linux::ListenerFrom>,
    /// Elsewhere the proxy listens on our loopback.
    #[cfg(all(unix, not(target_os = "linux")))]
    listener: Option<std::net::TcpListener>,
}

/// What a running sandboxed server has of ours: its proxy and its temporary directory.
pub(crate) struct Guard {
    #[cfg(unix)]
    proxy: Option<super::proxy::Proxy>,
    temp: PathBuf,
}

/// Everything a sandboxed spawn of `server` needs, or what is missing (the reason for
/// [`Error::Sandbox`](crate::Error::Sandbox)).
pub(crate) fn prepare(
    server: &str,
    rules: &Sandbox,
    configured_env: &[(String, String)],
) -> Result<Confined, String> {
    if let Some(missing) = super::unavailable() {
        return Err(format!("this system lacks {missing}"));
    }
    check(rules)?;
    let network = !rules.allowed_domains.is_empty();
    let temp = temp_dir(server)?;
    let result = confine(server, rules, configured_env, &temp, network);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    result
}

/// The rules' own errors: relative paths and domains that cannot be matched.
fn check(rules: &Sandbox) -> Result<(), String> {
    let paths = (rules.allow_write.iter())
        .chain(&rules.deny_read)
        .chain(&rules.deny_write);
    for path in paths {
        if !path.is_absolute() {
            return Err(format!(
                "the sandbox path {} is not absolute",
                path.display()
            ));
        }
    }
    for domain in rules.allowed_domains.iter().chain(&rules.denied_domains) {
        if let Some(why) = super::domains::invalid(domain) {
            return Err(format!("the sandbox domain {domain:?} is {why}"));
        }
    }
    Ok(())
}

#[cfg_attr(not(unix), allow(unused_variables))]
fn confine(
    server: &str,
    rules: &Sandbox,
    configured_env: &[(String, String)],
    temp: &Path,
    network: bool,
) -> Result<Confined, String> {
    // Linux: the kernel's part, and the proxy's listener inside the server's namespace.
    #[cfg(target_os = "linux")]
    let (plan, from, proxy) = {
        let mut writable = rules.allow_write.clone();
        writable.push(temp.to_path_buf());
        writable.push(PathBuf::from("/dev/null"));
        let (plan, from) = super::linux::Plan::new(rules, &writable, network)?;
        let proxy = network.then(|| format!("http://127.0.0.1:{}", super::PROXY_PORT));
        (std::sync::Arc::new(plan), from, proxy)
    };
    // Elsewhere: the proxy listens on our loopback.
    #[cfg(all(unix, not(target_os = "linux")))]
    let (listener, proxy) = {
        let listener = match network {
            true => Some(
                std::net::TcpListener::bind("127.0.0.1:0")
                    .map_err(|e| format!("the sandbox's proxy cannot listen: {e}"))?,
            ),
            false => None,
        };
        let port = (listener.as_ref())
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.port());
        (listener, port.map(|p| format!("http://127.0.0.1:{p}")))
    };
    #[cfg(not(unix))]
    return Err("the sandbox runs only on Linux and macOS".to_owned());
    #[cfg(unix)]
    Ok(Confined {
        server: server.to_owned(),
        rules: rules.clone(),
        temp: temp.to_path_buf(),
        env: super::env::environment(
            |n| std::env::var(n).ok(),
            configured_env,
            temp,
            proxy.as_deref(),
        ),
        #[cfg(target_os = "linux")]
        plan,
        #[cfg(target_os = "linux")]
        from,
        #[cfg(all(unix, not(target_os = "linux")))]
        listener,
    })
}

/// A new private directory for the server's temporary files (0700).
fn temp_dir(server: &str) -> Result<PathBuf, String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let safe: String = (server.chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(32)
        .collect();
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "mcp-sandbox-{safe}-{}-{}-{nanos:x}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "the sandbox's temporary directory in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err("no free name for the sandbox's temporary directory".to_owned())
}

impl Confined {
    /// The command that runs `program` with `args` in the sandbox, with the sandbox's whole
    /// environment (the command's own `env` is already in it).
    pub(crate) fn command(&self, program: PathBuf, args: &[String]) -> Command {
        #[cfg(target_os = "macos")]
        let mut cmd = {
            let port = (self.listener.as_ref())
                .and_then(|l| l.local_addr().ok())
                .map(|a| a.port());
            let mut cmd = Command::new(super::seatbelt::SANDBOX_EXEC);
            cmd.arg("-p")
                .arg(super::seatbelt::profile(&self.rules, &self.temp, port))
                .arg(program)
                .args(args);
            cmd
        };
        #[cfg(not(target_os = "macos"))]
        let mut cmd = {
            let mut cmd = Command::new(program);
            cmd.args(args);
            cmd
        };
        cmd.env_clear().envs(self.env.iter().map(|(k, v)| (k, v)));
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let plan = std::sync::Arc::clone(&self.plan);
            // SAFETY: `apply` makes only async-signal-safe system calls on what `plan` holds.
            unsafe {
                cmd.pre_exec(move || plan.apply());
            }
        }
        cmd
    }

    /// The server started: its proxy starts (the listener its process sent, or ours); a panic
    /// in the proxy goes to `failed`.
    #[cfg_attr(not(unix), allow(unused_variables))]
    pub(crate) fn started(
        mut self,
        failed: std::sync::Arc<dyn Fn(crate::error::Error) + Send + Sync>,
    ) -> Result<Guard, String> {
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut guard = Guard {
            #[cfg(unix)]
            proxy: None,
            temp: std::mem::take(&mut self.temp),
        };
        #[cfg(target_os = "linux")]
        let listener = match self.from.take() {
            Some(from) => Some(from.receive().ok_or_else(|| {
                "the sandboxed process did not hand over the proxy's listener".to_owned()
            })?),
            None => None,
        };
        #[cfg(all(unix, not(target_os = "linux")))]
        let listener = self.listener.take();
        #[cfg(unix)]
        if let Some(listener) = listener {
            guard.proxy = Some(
                super::proxy::Proxy::start(
                    &self.server,
                    listener,
                    self.rules.allowed_domains.clone(),
                    self.rules.denied_domains.clone(),
                    failed,
                )
                .map_err(|e| format!("the sandbox's proxy cannot start: {e}"))?,
            );
        }
        Ok(guard)
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        // A spawn that failed leaves nothing behind; a started one moved its directory on.
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

impl Drop for Guard {
    /// After the server is gone: the proxy stops (every connection, every thread) and the
    /// temporary directory is removed.
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(proxy) = self.proxy.take() {
            proxy.stop();
        }
        let _ = std::fs::remove_dir_all(&self.temp);
    }
}
