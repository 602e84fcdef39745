//! Connect-time value resolution, for stdio `env` values and http/sse `headers` values only
//! (never `url`, `command` or `args`):
//!
//! - `!command` runs the command through the shell (10 s bound), and the trimmed stdout is the
//!   value. Successes are cached for the life of the process; concurrent identical commands
//!   run once. A failure (non-zero exit, timeout, empty output) drops the entry.
//! - a value that names a set, non-empty environment variable takes that variable's value;
//! - anything else is the literal value (an empty one is dropped).
//!
//! OAuth: `"auth": {"type": "oauth", "credentialId": "<id>"}` with a credential in the
//! [`AuthStorage`] becomes `Authorization: Bearer <token>` (http/sse) or the env variable
//! `OAUTH_ACCESS_TOKEN` (stdio).
//!
//! A resolved value is never logged and never appears in an error text; logs name only the
//! server and the key whose value could not be resolved. The unresolved config stays the one
//! that identifies the server (the tool cache keys on it).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::server::{ServerConfig, TransportType};
use crate::auth::AuthStorage;
use crate::cancel::CancelToken;
use crate::error::Error;

/// A server config with its values resolved: what a connection is made from, and nothing
/// else. It has no `Serialize` and no `Clone` into a [`ServerConfig`], so a resolved secret
/// cannot reach the tool cache or a config file (the compiler sees to it), and its `Debug`
/// shows the keys of `env` and `headers`, never their values.
pub struct ResolvedConfig {
    config: ServerConfig,
}

impl ResolvedConfig {
    /// Where to connect, with the resolved values (see [`ServerConfig::endpoint`]).
    pub fn endpoint(
        &self,
        project_dir: &std::path::Path,
    ) -> Result<crate::client::Endpoint, Error> {
        self.config.endpoint(project_dir)
    }

    /// The resolved environment of a stdio server.
    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.config.env
    }

    /// The resolved headers of an HTTP or SSE server.
    pub fn headers(&self) -> &BTreeMap<String, String> {
        &self.config.headers
    }
}

impl std::fmt::Debug for ResolvedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedConfig")
            .field("env", &self.config.env.keys().collect::<Vec<_>>())
            .field("headers", &self.config.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The bound on one `!command`.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The config with its `env` (stdio) or `headers` (http/sse) values resolved and OAuth
/// injected. Entries whose value cannot be resolved are left out (with a warning naming the key).
pub fn resolve_server_config(
    name: &str,
    config: &ServerConfig,
    auth: Option<&dyn AuthStorage>,
) -> ResolvedConfig {
    ResolvedConfig {
        config: resolve(name, config, auth, None),
    }
}

/// [`resolve_server_config`] for a connect task that can be abandoned: when `cancel` fires, a
/// running `!command` is stopped (its whole process group, reaped before this returns) and the
/// result is [`Error::Cancelled`], so a cancelled connect starts nothing.
pub(crate) fn resolve_cancellable(
    name: &str,
    config: &ServerConfig,
    auth: Option<&dyn AuthStorage>,
    cancel: &CancelToken,
) -> Result<ResolvedConfig, Error> {
    let resolved = resolve(name, config, auth, Some(cancel));
    if cancel.is_cancelled() {
        return Err(Error::Cancelled);
    }
    Ok(ResolvedConfig { config: resolved })
}

fn resolve(
    name: &str,
    config: &ServerConfig,
    auth: Option<&dyn AuthStorage>,
    cancel: Option<&CancelToken>,
) -> ServerConfig {
    let mut resolved = config.clone();
    let stdio = matches!(config.transport_kind(), Ok(TransportType::Stdio));
    let values = if stdio {
        &mut resolved.env
    } else {
        &mut resolved.headers
    };
    let what = if stdio { "env" } else { "header" };
    *values = resolve_map(name, what, values, cancel);
    if let (false, Some(var)) = (stdio, &config.bearer_token_env_var) {
        match std::env::var(var) {
            Ok(token) if !token.is_empty() => set_bearer(&mut resolved.headers, &token),
            _ => {
                log::warn!("[{name}] bearerTokenEnvVar: ${var} is not set; no bearer token is sent")
            }
        }
    }
    if let Some(token) = oauth_token(name, config, auth) {
        if stdio {
            resolved.env.insert("OAUTH_ACCESS_TOKEN".into(), token);
        } else {
            set_bearer(&mut resolved.headers, &token);
        }
    }
    resolved
}

/// `Authorization: Bearer <token>`, replacing any `Authorization` header, whatever its case.
fn set_bearer(headers: &mut BTreeMap<String, String>, token: &str) {
    headers.retain(|k, _| !k.eq_ignore_ascii_case("authorization"));
    headers.insert("Authorization".into(), format!("Bearer {token}"));
}

fn resolve_map(
    server: &str,
    what: &str,
    values: &BTreeMap<String, String>,
    cancel: Option<&CancelToken>,
) -> BTreeMap<String, String> {
    values
        .iter()
        .filter_map(|(k, v)| match resolve_value(v, cancel) {
            Some(r) => Some((k.clone(), r)),
            None if cancel.is_some_and(CancelToken::is_cancelled) => None,
            None => {
                log::warn!("[{server}] {what} {k}: its value could not be resolved; left out");
                None
            }
        })
        .collect()
}

/// A secret value resolved as header values are (`!command`, an environment variable's
/// name, else the literal); `None` when it cannot be.
#[cfg_attr(not(feature = "oauth"), allow(dead_code))] // OAuth's only.
pub(crate) fn resolve_secret(value: &str) -> Option<String> {
    resolve_value(value, None)
}

fn resolve_value(value: &str, cancel: Option<&CancelToken>) -> Option<String> {
    if let Some(command) = value.strip_prefix('!') {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return None;
        }
        return cached(command.trim(), COMMAND_TIMEOUT, cancel);
    }
    if let Ok(from_env) = std::env::var(value) {
        if !from_env.is_empty() {
            return Some(from_env);
        }
    }
    (!value.is_empty()).then(|| value.to_owned())
}

fn oauth_token(
    server: &str,
    config: &ServerConfig,
    auth: Option<&dyn AuthStorage>,
) -> Option<String> {
    let spec = config.auth.as_ref()?;
    if spec.get("type").and_then(Value::as_str) != Some("oauth") {
        return None;
    }
    let id = spec.get("credentialId").and_then(Value::as_str)?;
    let Some(storage) = auth else {
        log::warn!("[{server}] uses OAuth credential {id:?}, but no auth storage is set");
        return None;
    };
    match storage.get(id) {
        Some(c) if !c.access_token.is_empty() => Some(c.access_token),
        _ => {
            log::warn!("[{server}] OAuth credential {id:?} is not in the auth storage");
            None
        }
    }
}

enum Slot {
    Running,
    Done(Option<String>),
}

struct Entry {
    slot: Mutex<Slot>,
    done: Condvar,
}

fn cache() -> &'static Mutex<HashMap<String, Arc<Entry>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Entry>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// How often a caller waiting for another caller's run of the same command checks its cancel.
const CANCEL_POLL: Duration = Duration::from_millis(20);

fn cached(command: &str, timeout: Duration, cancel: Option<&CancelToken>) -> Option<String> {
    let (entry, runs_it) = {
        let mut map = cache().lock();
        match map.get(command) {
            Some(e) => (Arc::clone(e), false),
            None => {
                let e = Arc::new(Entry {
                    slot: Mutex::new(Slot::Running),
                    done: Condvar::new(),
                });
                map.insert(command.to_owned(), Arc::clone(&e));
                (e, true)
            }
        }
    };
    if runs_it {
        let result = run(command, timeout, cancel);
        if result.is_none() {
            // Failures are not cached: the next connection attempt tries again.
            cache().lock().remove(command);
        }
        *entry.slot.lock() = Slot::Done(result.clone());
        entry.done.notify_all();
        return result;
    }
    let deadline = Instant::now() + timeout + Duration::from_secs(1);
    let mut slot = entry.slot.lock();
    loop {
        if let Slot::Done(result) = &*slot {
            return result.clone();
        }
        if cancel.is_some_and(CancelToken::is_cancelled) || Instant::now() >= deadline {
            return None;
        }
        let until = match cancel {
            Some(_) => deadline.min(Instant::now() + CANCEL_POLL),
            None => deadline,
        };
        entry.done.wait_until(&mut slot, until);
    }
}

fn run(command: &str, timeout: Duration, cancel: Option<&CancelToken>) -> Option<String> {
    // The command is the config's own text, for the system's shell as its owner wrote it. On
    // Windows it goes to `cmd /C` verbatim: quoting it as a program's argument would hide its
    // quotes and redirections from `cmd`.
    #[cfg(windows)]
    let mut cmd = {
        use std::os::windows::process::CommandExt;
        let mut c = Command::new("cmd");
        c.arg("/C")
            .raw_arg(command)
            .creation_flags(windows_sys::Win32::System::Threading::CREATE_NO_WINDOW);
        c
    };
    #[cfg(not(windows))]
    let mut cmd = {
        let mut c = Command::new("sh");
        c.args(["-c", command]);
        c
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().ok()?;
    let pid = child.id();
    let mut stdout = child.stdout.take()?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    // A panic in the reader fails the value (as a command that failed does).
    crate::panic::spawn(
        "mcp-value-command".into(),
        crate::panic::Boundary::Command,
        move || {
            let mut out = Vec::new();
            let _ = stdout.by_ref().take(1 << 20).read_to_end(&mut out);
            let status = child.wait();
            let _ = tx.send((status.map(|s| s.success()).unwrap_or(false), out));
        },
        |_| {},
    )
    .ok()?;
    let never = crossbeam_channel::never();
    let cancelled = cancel.map(CancelToken::receiver).unwrap_or(&never);
    let finished = crossbeam_channel::select! {
        recv(rx) -> done => done.ok(),
        recv(cancelled) -> _ => None,
        default(timeout) => None,
    };
    match finished {
        Some((true, out)) => {
            let text = String::from_utf8_lossy(&out).trim().to_owned();
            (!text.is_empty()).then_some(text)
        }
        Some((false, _)) => None,
        None => {
            // Timed out or cancelled: stop the command and everything it started; the reader
            // thread then sees EOF and reaps it, which is waited for (briefly) so nothing the
            // command started outlives the connect attempt.
            #[cfg(unix)]
            // SAFETY: signalling the process group we created for the command.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
            #[cfg(not(unix))]
            let _ = pid;
            let _ = rx.recv_timeout(Duration::from_secs(1));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of a `!command` with the default bound (what resolution does).
    fn run_value_command(command: &str) -> Option<String> {
        cached(command, COMMAND_TIMEOUT, None)
    }
    use serde_json::json;

    #[test]
    fn a_command_runs_once_for_concurrent_callers_and_is_cached() {
        let marker = std::env::temp_dir().join(format!("mcp-cmd-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        // The callers overlap while it sleeps (`cmd` has no sleep: there, the cache alone
        // keeps it to one run).
        let command = if cfg!(windows) {
            format!(
                "echo run>> \"{}\" & echo   secret-value  ",
                marker.display()
            )
        } else {
            format!(
                "echo run >> {0}; sleep 0.2; echo '  secret-value  '",
                marker.display()
            )
        };
        let results: Vec<Option<String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| run_value_command(&command)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            results.iter().all(|r| r.as_deref() == Some("secret-value")),
            "{results:?}"
        );
        assert_eq!(run_value_command(&command).as_deref(), Some("secret-value"));
        let runs = std::fs::read_to_string(&marker).unwrap();
        assert_eq!(runs.lines().count(), 1, "ran {runs:?}");
        std::fs::remove_file(&marker).unwrap();
    }

    #[test]
    fn failures_and_timeouts_drop_the_value() {
        assert_eq!(run_value_command("exit 3"), None);
        assert_eq!(run_value_command("true"), None, "empty output");
        let started = Instant::now();
        assert_eq!(
            cached("sleep 30; echo late", Duration::from_millis(200), None),
            None
        );
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[cfg(unix)]
    #[test]
    fn a_cancelled_resolution_stops_its_command_and_resolves_nothing() {
        let marker = std::env::temp_dir().join(format!("mcp-cmd-cancel-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let config: ServerConfig = serde_json::from_value(json!({
            "command": "x",
            "env": {"A": format!("!echo $$ > {0}; sleep 30; echo late", marker.display())}
        }))
        .unwrap();
        let cancel = CancelToken::new();
        let firing = cancel.clone();
        let marker_seen = marker.clone();
        let fire = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::fs::read_to_string(&marker_seen).map_or(true, |s| s.trim().is_empty())
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            firing.cancel();
        });
        let started = Instant::now();
        let outcome = resolve_cancellable("s", &config, None, &cancel);
        fire.join().unwrap();
        assert!(matches!(outcome, Err(Error::Cancelled)), "{outcome:?}");
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "the command ran on"
        );
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "the command's shell {pid} outlived the cancel");
        std::fs::remove_file(&marker).unwrap();
    }

    #[test]
    fn resolves_env_and_headers_only() {
        std::env::set_var("MCP_RESOLVE_TEST_TOKEN", "from-env");
        let stdio: ServerConfig = serde_json::from_value(json!({
            "command": "MCP_RESOLVE_TEST_TOKEN",
            "args": ["MCP_RESOLVE_TEST_TOKEN"],
            "env": {"A": "MCP_RESOLVE_TEST_TOKEN", "B": "literal", "C": "!echo computed", "D": "!exit 1"}
        }))
        .unwrap();
        let r = resolve_server_config("s", &stdio, None);
        assert_eq!(r.env().get("A").map(String::as_str), Some("from-env"));
        assert_eq!(r.env().get("B").map(String::as_str), Some("literal"));
        assert_eq!(r.env().get("C").map(String::as_str), Some("computed"));
        assert!(!r.env().contains_key("D"));
        assert_eq!(r.config.command.as_deref(), Some("MCP_RESOLVE_TEST_TOKEN"));
        assert_eq!(r.config.args, ["MCP_RESOLVE_TEST_TOKEN"]);
        let shown = format!("{r:?}");
        assert!(
            !shown.contains("from-env") && !shown.contains("computed"),
            "{shown}"
        );
        let http: ServerConfig = serde_json::from_value(json!({
            "url": "http://127.0.0.1/MCP_RESOLVE_TEST_TOKEN",
            "headers": {"X-Key": "MCP_RESOLVE_TEST_TOKEN"},
            "env": {"A": "MCP_RESOLVE_TEST_TOKEN"}
        }))
        .unwrap();
        let r = resolve_server_config("h", &http, None);
        assert_eq!(
            r.headers().get("X-Key").map(String::as_str),
            Some("from-env")
        );
        assert_eq!(
            r.config.url.as_deref(),
            Some("http://127.0.0.1/MCP_RESOLVE_TEST_TOKEN")
        );
        assert_eq!(
            r.env().get("A").map(String::as_str),
            Some("MCP_RESOLVE_TEST_TOKEN")
        );
    }
}
