//! SIGINT, SIGTERM and SIGHUP: every server is closed (`McpManager::close`), then the CLI exits
//! with 130, 143 or 129 (128 + the signal), as a shell expects. On Windows, Ctrl+C and
//! Ctrl+Break are SIGINT's 130 and closing the console window SIGHUP's 129; the system runs the
//! handler on a thread of its own, which runs the cleanups and exits.
//!
//! The handler only writes the signal's number to a pipe (async-signal-safe); one thread reads
//! the pipe and runs the cleanups registered so far (outside any lock), then exits. The signals
//! are handled, not blocked: a blocked mask is inherited by every thread and, through them, by
//! every server process the CLI spawns (which then could not be stopped with SIGTERM), while a
//! handler is reset to the default in a child at `exec`.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_runtime::manager::McpManager;

type Cleanup = Box<dyn FnOnce() + Send>;

static CLEANUPS: Mutex<Vec<Cleanup>> = Mutex::new(Vec::new());
static CAUGHT: AtomicI32 = AtomicI32::new(0);
#[cfg(unix)]
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// How long the main thread waits for the signal thread to end the process (its cleanups are
/// bounded by the close grace periods, well under this).
const EXIT_BOUND: Duration = Duration::from_secs(30);

#[cfg(unix)]
extern "C" fn handle(sig: libc::c_int) {
    let byte = sig as u8;
    // SAFETY: write(2) is async-signal-safe; the fd is the pipe's write end (or -1: EBADF).
    unsafe {
        libc::write(
            PIPE_WRITE.load(Ordering::Relaxed),
            (&byte as *const u8).cast(),
            1,
        );
    }
}

/// Installs the handlers and starts the thread that acts on them. Call first in `main`.
pub fn install() {
    #[cfg(unix)]
    {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe fills two descriptors; close-on-exec keeps them out of servers (set
        // before any server is spawned: this runs first in `main`).
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            log::warn!("no signal handling: {}", std::io::Error::last_os_error());
            return;
        }
        for fd in fds {
            // SAFETY: setting FD_CLOEXEC on a descriptor we just created.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        let [read_fd, write_fd] = fds;
        PIPE_WRITE.store(write_fd, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("cli-signals".into())
            .spawn(move || loop {
                let mut byte = 0u8;
                // SAFETY: reading one byte into a local from the pipe's read end we own.
                let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
                if n == 1 {
                    run_cleanups_and_exit(byte as i32);
                }
                if n == 0
                    || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return;
                }
            });
        if let Err(e) = spawned {
            log::warn!("no signal handling: {e}");
            return;
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction with our handler, SA_RESTART, and an empty mask.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handle as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Console::SetConsoleCtrlHandler;
        // SAFETY: registers a handler function that lives as long as the process.
        if unsafe { SetConsoleCtrlHandler(Some(console_event), 1) } == 0 {
            log::warn!("no Ctrl+C handling: {}", std::io::Error::last_os_error());
        }
    }
}

/// Ctrl+C, Ctrl+Break, the console closed: as SIGINT (130) or SIGHUP (129) on Unix.
#[cfg(windows)]
unsafe extern "system" fn console_event(event: u32) -> windows_sys::core::BOOL {
    use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT};
    match event {
        CTRL_C_EVENT | CTRL_BREAK_EVENT => run_cleanups_and_exit(2),
        CTRL_CLOSE_EVENT => run_cleanups_and_exit(1),
        // Log-off and shutdown reach services only; let the default handler have them.
        _ => 0,
    }
}

#[cfg(any(unix, windows))]
fn run_cleanups_and_exit(sig: i32) -> ! {
    // Under the lock, so a cleanup registered from now on runs at once instead.
    let cleanups = {
        let mut registered = lock();
        CAUGHT.store(sig, Ordering::SeqCst);
        std::mem::take(&mut *registered)
    };
    for cleanup in cleanups {
        cleanup();
    }
    run_finally();
    std::process::exit(128 + sig);
}

/// What runs after the cleanups when the command exits for a signal or at once (the telemetry's
/// last export: after the servers are closed, so their spans are in it).
static FINALLY: Mutex<Option<fn()>> = Mutex::new(None);

/// Runs `last` after the cleanups on a signal or an immediate exit.
pub fn finally(last: fn()) {
    *FINALLY.lock().unwrap_or_else(|p| p.into_inner()) = Some(last);
}

fn run_finally() {
    let last = FINALLY.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(last) = last {
        last();
    }
}

/// Whether a signal is being handled (the servers are being closed; the process exits soon).
pub fn interrupted() -> bool {
    CAUGHT.load(Ordering::SeqCst) != 0
}

/// Runs the cleanups registered so far (closing the servers) and exits with `code`: for a
/// command that cannot go on (its output is gone).
pub fn exit_now(code: i32) -> ! {
    let cleanups = std::mem::take(&mut *lock());
    for cleanup in cleanups {
        cleanup();
    }
    run_finally();
    std::process::exit(code);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Cleanup>> {
    CLEANUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `cleanup` if a signal arrives. Registered after a signal arrived, it runs at once and
/// the caller never returns (the process is exiting).
pub fn on_signal(cleanup: impl FnOnce() + Send + 'static) {
    let mut registered = lock();
    if CAUGHT.load(Ordering::SeqCst) == 0 {
        registered.push(Box::new(cleanup));
        return;
    }
    drop(registered);
    cleanup();
    finish(0);
}

/// Closes every server of `manager` if a signal arrives.
pub fn close_on_signal(manager: &McpManager) {
    let manager = manager.clone();
    on_signal(move || manager.close());
}

/// The exit status to return from `main`: `code`, unless a signal is being handled; then the
/// signal thread ends the process (after its cleanups), and this waits for it, bounded.
pub fn finish(code: u8) -> u8 {
    let sig = CAUGHT.load(Ordering::SeqCst);
    if sig == 0 {
        return code;
    }
    let deadline = Instant::now() + EXIT_BOUND;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (128 + sig) as u8;
        }
        std::thread::park_timeout(left);
    }
}
