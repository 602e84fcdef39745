//! OAuth credentials in a file: [`FileAuthStorage`] (mode 0600), the default
//! [`AuthStorage`] for servers whose config says `"auth": {"type": "oauth", "credentialId":
//! ...}` or that log in with OAuth.
//!
//! Several processes may share one file (the CLI and a host, two hosts): a refresh holds
//! [`AuthStorage::exclusive`], which here is an advisory lock on a file beside it
//! (`auth.json.refresh.lock`), and writes go under a second one (`auth.json.lock`), so a
//! read-modify-write in one process never drops another's entry.

use std::path::{Path, PathBuf};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Map, Value};

use super::jsonc;
use crate::auth::{AuthStorage, Credential};
use crate::error::Error;
use crate::files::write_private;

/// Credentials in a JSON file (`{"credentials": {"<id>": {...}}}`), written atomically with
/// mode 0600.
#[derive(Debug)]
pub struct FileAuthStorage {
    path: PathBuf,
    lock: Mutex<()>,
    /// Whether a refresh in this process holds the file's refresh lock (a `flock` taken twice
    /// by one process on two descriptors would wait for itself).
    refresh: std::sync::Arc<(Mutex<bool>, parking_lot::Condvar)>,
}

impl FileAuthStorage {
    /// Storage in `path` (created on the first `set`).
    pub fn new(path: impl Into<PathBuf>) -> FileAuthStorage {
        FileAuthStorage {
            path: path.into(),
            lock: Mutex::new(()),
            refresh: std::sync::Arc::new((Mutex::new(false), parking_lot::Condvar::new())),
        }
    }

    /// Storage in the user's own file, `~/.mcp-runtime/auth.json`: where OAuth logins are
    /// kept unless a host gives its own storage.
    pub fn user_default() -> FileAuthStorage {
        FileAuthStorage::new(
            crate::files::home_dir()
                .join(".mcp-runtime")
                .join("auth.json"),
        )
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Value, Error> {
        match jsonc::read(&self.path) {
            Ok(v) => Ok(v),
            Err(jsonc::ReadError::Missing) => Ok(serde_json::json!({"credentials": {}})),
            Err(jsonc::ReadError::Bad(e)) => Err(Error::Config {
                message: format!("{}: {e}", self.path.display()),
            }),
        }
    }

    /// A lock file beside the store (`auth.json.<what>.lock`, or `auth.json.lock`).
    fn lock_path(&self, what: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        if !what.is_empty() {
            name.push(".");
            name.push(what);
        }
        name.push(".lock");
        self.path.with_file_name(name)
    }

    fn update(&self, f: impl FnOnce(&mut Map<String, Value>)) -> Result<(), Error> {
        let _guard = self.lock.lock();
        let _file = file_lock::acquire(&self.lock_path(""), Duration::from_secs(10))?;
        let mut root = self.read()?;
        let Some(obj) = root.as_object_mut() else {
            return Err(Error::Config {
                message: format!("{}: not a JSON object", self.path.display()),
            });
        };
        let creds = obj
            .entry("credentials")
            .or_insert_with(|| Value::Object(Map::new()));
        if !creds.is_object() {
            *creds = Value::Object(Map::new());
        }
        if let Some(map) = creds.as_object_mut() {
            f(map);
        }
        let text = serde_json::to_string_pretty(&root).unwrap_or_default() + "\n";
        write_private(&self.path, text.as_bytes())
    }
}

impl AuthStorage for FileAuthStorage {
    fn get(&self, id: &str) -> Option<Credential> {
        let root = self.read().ok()?;
        serde_json::from_value(root.get("credentials")?.get(id)?.clone()).ok()
    }

    fn set(&self, id: &str, credential: Credential) -> Result<(), Error> {
        let value = serde_json::to_value(credential).map_err(|e| Error::protocol(e.to_string()))?;
        self.update(|m| {
            m.insert(id.to_owned(), value);
        })
    }

    fn remove(&self, id: &str) -> Result<(), Error> {
        self.update(|m| {
            m.remove(id);
        })
    }

    fn exclusive(&self, bound: Duration) -> Result<Box<dyn Send>, Error> {
        let deadline = std::time::Instant::now() + bound;
        {
            let (held, freed) = &*self.refresh;
            let mut held = held.lock();
            while *held {
                if freed.wait_until(&mut held, deadline).timed_out() && *held {
                    return Err(held_too_long(&self.path, bound));
                }
            }
            *held = true;
        }
        let inner = InProcess(std::sync::Arc::clone(&self.refresh));
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let file = file_lock::acquire(&self.lock_path("refresh"), left)?;
        Ok(Box::new((file, inner)))
    }
}

/// This process's share of a refresh hold: freed on drop.
struct InProcess(std::sync::Arc<(Mutex<bool>, parking_lot::Condvar)>);

impl Drop for InProcess {
    fn drop(&mut self) {
        let (held, freed) = &*self.0;
        *held.lock() = false;
        freed.notify_one();
    }
}

fn held_too_long(path: &Path, bound: Duration) -> Error {
    Error::Config {
        message: format!(
            "{}: another process held the token store for more than {} ms",
            path.display(),
            bound.as_millis()
        ),
    }
}

/// Advisory locks on a file (`flock` on Unix, `LockFileEx` on Windows): released when the file
/// is closed, or when the process holding it dies. Where there is neither, only this process's
/// own lock serialises.
mod file_lock {
    use std::fs::File;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use crate::error::Error;

    /// A held lock; dropping it closes the file and releases the lock.
    pub(super) struct Held(#[allow(dead_code)] Option<File>);

    /// Takes the lock on `path` (created; mode 0600 on Unix), waiting at most `bound`.
    pub(super) fn acquire(path: &Path, bound: Duration) -> Result<Held, Error> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path).map_err(|e| Error::Config {
            message: format!("{}: {e}", path.display()),
        })?;
        let deadline = Instant::now() + bound;
        let mut pause = Duration::from_millis(1);
        loop {
            match try_lock(&file) {
                Ok(true) => return Ok(Held(Some(file))),
                Ok(false) => {}
                Err(err) => {
                    return Err(Error::Config {
                        message: format!("{}: cannot lock: {err}", path.display()),
                    })
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(super::held_too_long(path, bound));
            }
            // The holder is another process; nothing here can wake this one, so it looks again
            // after a pause that grows to 20 ms (a refresh takes one request).
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Takes the lock if it is free: `Ok(false)` when another holder has it.
    #[cfg(unix)]
    fn try_lock(file: &File) -> std::io::Result<bool> {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK)
            || err.kind() == std::io::ErrorKind::Interrupted
        {
            return Ok(false);
        }
        Err(err)
    }

    /// Takes the lock if it is free: `Ok(false)` when another holder has it.
    #[cfg(windows)]
    fn try_lock(file: &File) -> std::io::Result<bool> {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
        use windows_sys::Win32::Storage::FileSystem::{
            LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
        };
        // SAFETY: a zeroed OVERLAPPED (offset 0, no event) is what a synchronous lock takes.
        let mut at: windows_sys::Win32::System::IO::OVERLAPPED = unsafe { std::mem::zeroed() };
        // SAFETY: the file's valid handle; the whole file's range; `at` lives across the call.
        let locked = unsafe {
            LockFileEx(
                file.as_raw_handle(),
                LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
                0,
                u32::MAX,
                u32::MAX,
                &mut at,
            )
        };
        if locked != 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
            return Ok(false);
        }
        Err(err)
    }

    #[cfg(not(any(unix, windows)))]
    fn try_lock(_: &File) -> std::io::Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_reads_back_privately() {
        let path = std::env::temp_dir().join(format!("mcp-auth-{}/auth.json", std::process::id()));
        let store = FileAuthStorage::new(&path);
        assert!(store.get("x").is_none());
        let cred = Credential {
            access_token: "tok".into(),
            expires_at: Some(1),
            refresh_token: None,
            extra: Map::new(),
        };
        store.set("x", cred.clone()).unwrap();
        assert_eq!(store.get("x"), Some(cred.clone()));
        assert!(!format!("{cred:?}").contains("tok"));
        store.remove("x").unwrap();
        assert!(store.get("x").is_none());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
