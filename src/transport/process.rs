//! The server process: its own process group, exit waits without a thread, and a bounded
//! teardown that leaves nothing behind (no zombie, no orphaned grandchild).
//!
//! Waiting for the exit with a deadline uses the process's pidfd on Linux (a `poll` that
//! returns when it exits), its handle on Windows; elsewhere, and on kernels without pidfds, a
//! short polling loop. The child is reaped with `try_wait` once it has exited.
//!
//! On Windows there are no process groups: the server runs in a Job Object (see `job`), which
//! the teardown terminates and whose process count says when the tree is gone. There is no
//! SIGTERM either: after the stdin grace the job is terminated.

use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// After SIGKILL, how long a close waits for the server and its process group to be gone.
pub(crate) const KILL_WAIT: Duration = Duration::from_secs(1);

/// A spawned server process.
pub(crate) struct ServerProcess {
    pid: u32,
    child: Mutex<Child>,
    exit: Mutex<Option<ExitStatus>>,
    stderr: Mutex<bool>,
    stderr_done: Condvar,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::os::fd::OwnedFd>,
    #[cfg(windows)]
    job: Option<super::job::Job>,
    #[cfg(windows)]
    handle: super::job::ProcessHandle,
}

/// Asks the command to start the child in a new process group (so signals reach its
/// grandchildren too, and a terminal's job control does not reach it).
pub(crate) fn own_process_group(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        // CREATE_NO_WINDOW: a console server started by a windowed host (an editor, a desktop
        // app) gets no console window of its own; its pipes work the same.
        command.creation_flags(windows_sys::Win32::System::Threading::CREATE_NO_WINDOW);
    }
    #[cfg(not(any(unix, windows)))]
    let _ = command;
}

/// Turns `O_NONBLOCK` on or off for one of the server's pipes (stdin, stdout, stderr).
#[cfg(unix)]
pub(crate) fn set_nonblocking(pipe: &impl std::os::fd::AsRawFd, on: bool) {
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns, changing only O_NONBLOCK.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            let flags = if on {
                flags | libc::O_NONBLOCK
            } else {
                flags & !libc::O_NONBLOCK
            };
            libc::fcntl(fd, libc::F_SETFL, flags);
        }
    }
}

impl ServerProcess {
    /// Takes ownership of `child`.
    pub(crate) fn new(child: Child) -> ServerProcess {
        let pid = child.id();
        #[cfg(windows)]
        let (job, handle) = (
            super::job::Job::hold(&child),
            super::job::ProcessHandle::of(&child),
        );
        ServerProcess {
            pid,
            child: Mutex::new(child),
            exit: Mutex::new(None),
            stderr: Mutex::new(false),
            stderr_done: Condvar::new(),
            #[cfg(target_os = "linux")]
            pidfd: open_pidfd(pid),
            #[cfg(windows)]
            job,
            #[cfg(windows)]
            handle,
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
        #[cfg(windows)]
        self.handle.wait(left);
        #[cfg(not(windows))]
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
    /// group, wait `grace` again, then SIGKILL it and wait (at most [`KILL_WAIT`]) until it is
    /// gone. "Gone" is the whole group: the server reaped, and no member of its process group
    /// left (grandchildren of a server that exited get the same SIGTERM, then SIGKILL).
    /// Bounded by `2 × grace + KILL_WAIT`. True when the group is gone.
    pub(crate) fn terminate(&self, grace: Duration) -> bool {
        let start = Instant::now();
        if self.wait_gone(start + grace) {
            return true;
        }
        // Windows has no SIGTERM to send: the job is terminated after the stdin grace.
        if cfg!(unix) {
            self.signal_group(Signal::Term);
            if self.wait_gone(Instant::now() + grace) {
                return true;
            }
        }
        self.signal_group(Signal::Kill);
        if self.wait_gone(Instant::now() + KILL_WAIT) {
            return true;
        }
        log::warn!(
            "process group {} is still alive {:?} after SIGKILL",
            self.pid,
            KILL_WAIT
        );
        false
    }

    /// Waits until the server has exited (reaped) and its process group is empty, or
    /// `deadline`. The leader is awaited on its pidfd; the rest of the group, which we cannot
    /// wait for (not our children), is looked at with a backoff from 1 ms to 32 ms.
    fn wait_gone(&self, deadline: Instant) -> bool {
        if self.wait_exit(deadline).is_none() {
            return false;
        }
        let mut pause = Duration::from_millis(1);
        loop {
            if !self.group_alive() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(32));
        }
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
        #[cfg(windows)]
        if let Signal::Kill = signal {
            match &self.job {
                Some(job) => job.terminate(),
                None => {
                    let _ = self.child.lock().kill();
                }
            }
        }
        #[cfg(not(any(unix, windows)))]
        if let Signal::Kill = signal {
            let _ = self.child.lock().kill();
        }
    }

    /// Whether the server or a process it started is still running.
    fn group_alive(&self) -> bool {
        #[cfg(windows)]
        return self
            .job
            .as_ref()
            .and_then(super::job::Job::active)
            .is_some_and(|n| n > 0);
        #[cfg(not(windows))]
        group_alive(self.pid)
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

/// Whether any process of the group `pgid` is still running (zombies waiting for their
/// parent, or for an init that does not reap, count as gone: they run no code and hold no
/// resources but their process table entry).
#[cfg(not(windows))]
fn group_alive(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 only checks whether the group has a member we may signal.
        if unsafe { libc::kill(-(pgid as libc::pid_t), 0) } != 0 {
            return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        }
        #[cfg(target_os = "linux")]
        return linux_group_has_live_member(pgid);
        #[cfg(not(target_os = "linux"))]
        return true;
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// Scans `/proc` for a process of group `pgid` that is not a zombie. (Only reached when
/// `kill(-pgid, 0)` says the group has members: at close, for a server that left some.)
#[cfg(target_os = "linux")]
fn linux_group_has_live_member(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next().unwrap_or("Z");
        let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) && state != "Z" && state != "X" {
            return true;
        }
    }
    false
}

/// The signals of the teardown.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    /// Ask to stop.
    Term,
    /// Stop now.
    Kill,
}
