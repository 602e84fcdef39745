//! The server process: its own process group, exit waits without a thread, and a bounded
//! teardown that leaves nothing behind (no zombie, no orphaned grandchild).
//!
//! Waiting for the exit with a deadline uses the process's pidfd on Linux (a `poll` that
//! returns when it exits); elsewhere, and on kernels without pidfds, a short polling loop.
//! The child is reaped with `try_wait` once it has exited.

use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A spawned server process.
pub(crate) struct ServerProcess {
    pid: u32,
    child: Mutex<Child>,
    exit: Mutex<Option<ExitStatus>>,
    stderr: Mutex<bool>,
    stderr_done: Condvar,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
}

/// Asks the command to start the child in a new process group (so signals reach its
/// grandchildren too, and a terminal's job control does not reach it).
pub(crate) fn own_process_group(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = command;
}

impl ServerProcess {
    /// Takes ownership of `child`.
    pub(crate) fn new(child: Child) -> ServerProcess {
        let pid = child.id();
        ServerProcess {
            pid,
            child: Mutex::new(child),
            exit: Mutex::new(None),
            stderr: Mutex::new(false),
            stderr_done: Condvar::new(),
            #[cfg(target_os = "linux")]
            pidfd: open_pidfd(pid),
        }
    }

    /// The process id (also the process group id on Unix).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status, if the process has exited (reaping it).
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        let mut exit = self.exit.lock();
        if exit.is_none() {
            *exit = self.child.lock().try_wait().ok().flatten();
        }
        *exit
    }

    /// Waits until the process has exited or `deadline` passes.
    pub(crate) fn wait_exit(&self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.exit_status() {
                return Some(status);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.wait_readable(left);
        }
    }

    /// Blocks until the process may have exited, at most `left`.
    fn wait_readable(&self, left: Duration) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.pidfd {
            use std::os::fd::AsRawFd;
            let mut pfd = libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            // SAFETY: one valid pollfd for the pidfd we own; it becomes readable at exit.
            unsafe { libc::poll(&mut pfd, 1, ms) };
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(5)));
    }

    /// Records that the stderr drain reached EOF.
    pub(crate) fn mark_stderr_done(&self) {
        *self.stderr.lock() = true;
        self.stderr_done.notify_all();
    }

    /// Waits until the stderr drain is done or `deadline` passes.
    pub(crate) fn wait_stderr_done(&self, deadline: Instant) {
        let mut done = self.stderr.lock();
        while !*done {
            if self.stderr_done.wait_until(&mut done, deadline).timed_out() {
                break;
            }
        }
    }

    /// The escalation after stdin was closed: wait `grace` for a clean exit, then SIGTERM the
    /// group, wait `grace` again, then SIGKILL it. Whatever is left of the group afterwards
    /// (grandchildren of a server that exited) is killed too. Bounded by `2 × grace + 1 s`.
    pub(crate) fn terminate(&self, grace: Duration) -> Option<ExitStatus> {
        let mut status = self.wait_exit(Instant::now() + grace);
        if status.is_none() {
            self.signal_group(Signal::Term);
            status = self.wait_exit(Instant::now() + grace);
        }
        if status.is_none() {
            self.signal_group(Signal::Kill);
            status = self.wait_exit(Instant::now() + Duration::from_secs(1));
        }
        // The leader is gone; sweep any member of its group still alive.
        self.signal_group(Signal::Kill);
        status
    }

    /// Sends a signal to the whole process group.
    pub(crate) fn signal_group(&self, signal: Signal) {
        #[cfg(unix)]
        {
            let sig = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            // SAFETY: kill(2) with a negative pid signals the group whose id is our child's pid
            // (it was made a group leader at spawn). ESRCH (no such group) is fine to ignore.
            unsafe {
                libc::kill(-(self.pid as libc::pid_t), sig);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = signal;
            let _ = self.child.lock().kill();
            let _ = Command::new("taskkill")
                .args(["/PID", &self.pid.to_string(), "/T", "/F"])
                .output();
        }
    }
}

#[cfg(target_os = "linux")]
fn open_pidfd(pid: u32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) } as libc::c_int;
    // SAFETY: a non-negative return is a descriptor we now own.
    (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// The signals of the teardown.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    /// Ask to stop.
    Term,
    /// Stop now.
    Kill,
}
