//! Linux: no server outlives its host, even one killed outright (SIGKILL, a crash, the OOM
//! killer), which runs no destructor.
//!
//! At the first server spawn the host forks a tiny *guardian* process. The two are joined by a
//! Unix socket pair whose host end is `O_CLOEXEC` (no server inherits it) and which only the
//! host and the guardian hold. The host sends one 8-byte record per change ("watch process
//! group N", "forget process group N"); the guardian keeps the watched groups in a table.
//! When the host dies, however it dies, the kernel closes its end: the guardian's `read`
//! returns end-of-file, and it SIGKILLs every group it still watches and exits. A host that
//! exits normally with servers still open gets the same treatment.
//!
//! Why not `PR_SET_PDEATHSIG`: it fires when the *thread* that spawned the child exits, not
//! the process (a server started from a short-lived connect thread would die with that
//! thread), and it reaches only the direct child, never its grandchildren. The guardian kills
//! whole process groups and depends on nothing but the socket.
//!
//! After `fork` the guardian only makes async-signal-safe calls (the host may have other
//! threads, holding locks the child would inherit locked): it closes every descriptor but its
//! socket (so it never keeps a server's pipes, the host's stdout or a terminal open), starts a
//! session of its own (`setsid`: a terminal's signals do not reach it), ignores SIGINT,
//! SIGTERM, SIGHUP, SIGQUIT and SIGPIPE, moves to `/` (so it keeps no directory busy), and
//! reads. Its table of groups is allocated before the fork; it holds [`MAX_GROUPS`] entries,
//! and groups beyond that are not watched.
//!
//! If the guardian dies (someone killed it), the next change the host sends fails; the host
//! then reaps it and starts a new one, which is told every group being watched.
//!
//! A host that exits normally (`exit`, the end of `main`) closes its end in an `atexit` handler
//! and reaps the guardian (waiting at most [`EXIT_WAIT`]), so the guardian, and any server the
//! host never closed, are gone before the host is.
//!
//! Limits: a process that leaves its group (`setsid`, `setpgid`) escapes a group kill; a server
//! spawned in the instant before its group is registered escapes a host death in that instant;
//! a host that forks without exec shares its end of the socket with the copy, and the guardian
//! acts when both are gone. Forking a large host copies its page tables once (milliseconds).
//! Other Unix systems (macOS) have no guardian: there a host killed outright may leave its
//! servers running (a closed or dropped connection still stops its whole group).

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The most process groups one guardian watches at once.
pub(crate) const MAX_GROUPS: usize = 4096;

/// At a normal exit, how long the host waits for the guardian to finish.
pub(crate) const EXIT_WAIT: Duration = Duration::from_millis(500);

const WATCH: u32 = 1;
const FORGET: u32 = 2;

/// The host's side of the guardian.
struct Guardian {
    /// The host's end of the socket (-1: no guardian yet).
    sock: RawFd,
    /// The guardian's pid (to reap it if it dies).
    pid: libc::pid_t,
    /// Every group being watched (told again to a new guardian).
    groups: Vec<u32>,
}

/// The lock is held for non-blocking 8-byte sends (never a wait) and, once, for the fork: the
/// records must reach the guardian in the order the groups come and go.
static GUARDIAN: Mutex<Guardian> = Mutex::new(Guardian {
    sock: -1,
    pid: -1,
    groups: Vec::new(),
});

/// Registers a server's process group: if this process dies, the group is killed.
pub(crate) fn watch(pgid: u32) {
    let mut g = GUARDIAN.lock();
    g.groups.push(pgid);
    if g.sock >= 0 {
        match g.send(WATCH, pgid) {
            Ok(()) => return,
            // Alive but not reading (stopped?): replacing it would make it kill every group.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                log::warn!(
                    "the process guardian is not reading; process group {pgid} is not watched"
                );
                return;
            }
            Err(_) => {}
        }
    }
    g.restart();
}

/// The group is gone (or no longer ours to kill).
pub(crate) fn forget(pgid: u32) {
    let mut g = GUARDIAN.lock();
    let Some(i) = g.groups.iter().position(|p| *p == pgid) else {
        return;
    };
    g.groups.swap_remove(i);
    // A dead guardian is replaced at the next `watch`; one that forgot nothing is harmless.
    if g.sock >= 0 {
        let _ = g.send(FORGET, pgid);
    }
}

/// At a normal exit: end the guardian (it kills what is still watched) and reap it.
extern "C" fn at_exit() {
    let Some(mut g) = GUARDIAN.try_lock_for(Duration::from_millis(100)) else {
        return;
    };
    if g.sock < 0 {
        return;
    }
    // SAFETY: closing our end of the socket; the guardian sees end-of-file.
    unsafe { libc::close(g.sock) };
    g.sock = -1;
    let deadline = Instant::now() + EXIT_WAIT;
    // Held meanwhile, so no thread starts another guardian.
    while Instant::now() < deadline {
        // SAFETY: waitpid on our own child, without blocking.
        let r = unsafe { libc::waitpid(g.pid, std::ptr::null_mut(), libc::WNOHANG) };
        if r != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The guardian's pid, if one runs (for tests).
#[cfg(test)]
pub(crate) fn pid() -> Option<libc::pid_t> {
    let g = GUARDIAN.lock();
    (g.sock >= 0).then_some(g.pid)
}

impl Guardian {
    /// Sends one record. Fails when the guardian is gone (or not reading: `WouldBlock`).
    fn send(&mut self, op: u32, pgid: u32) -> std::io::Result<()> {
        let mut record = [0u8; 8];
        record[..4].copy_from_slice(&op.to_ne_bytes());
        record[4..].copy_from_slice(&pgid.to_ne_bytes());
        loop {
            // SAFETY: an 8-byte buffer we own, on a socket we own. MSG_NOSIGNAL: a dead
            // guardian is an error here, not a SIGPIPE; MSG_DONTWAIT: never a wait under the
            // lock. A stream socket takes 8 bytes whole or not at all while it has room.
            let n = unsafe {
                libc::send(
                    self.sock,
                    record.as_ptr().cast(),
                    record.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n == record.len() as isize {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            log::debug!("the process guardian did not take a record: {e}");
            return Err(e);
        }
    }

    /// Starts a (new) guardian and tells it every watched group.
    fn restart(&mut self) {
        if self.sock >= 0 {
            // SAFETY: closing our end of the old guardian's socket, then reaping it if it has
            // exited (WNOHANG: never a wait).
            unsafe {
                libc::close(self.sock);
                libc::waitpid(self.pid, std::ptr::null_mut(), libc::WNOHANG);
            }
            self.sock = -1;
        }
        match spawn() {
            Ok((sock, pid)) => {
                self.sock = sock;
                self.pid = pid;
                for pgid in self.groups.clone() {
                    if self.send(WATCH, pgid).is_err() {
                        break;
                    }
                }
            }
            Err(e) => log::warn!(
                "cannot start the process guardian ({e}); a host killed outright may leave \
                 its servers running"
            ),
        }
    }
}

/// Forks the guardian. Returns the host's end of the socket and the guardian's pid.
fn spawn() -> std::io::Result<(RawFd, libc::pid_t)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: socketpair writes two new descriptors into `fds`.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    let [host, child] = fds;
    // Everything the child needs is made before the fork: it must not allocate.
    let mut table = vec![0u32; MAX_GROUPS];
    let max_fd = highest_fd();
    // SAFETY: fork; the child runs only async-signal-safe code and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child, right after the fork, with the descriptors made above.
        unsafe { guardian_main(child, &mut table, max_fd) }
    }
    // SAFETY: the parent closes the guardian's end; on a failed fork, its own too.
    unsafe {
        libc::close(child);
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            libc::close(host);
            return Err(e);
        }
    }
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: registering a plain function; it only closes a descriptor and reaps a child.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(at_exit);
    });
    log::debug!("started the process guardian (pid {pid})");
    Ok((host, pid))
}

/// The highest descriptor number that may be open (for closing them all without `close_range`).
fn highest_fd() -> libc::c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if ok && limit.rlim_cur != libc::RLIM_INFINITY {
        limit.rlim_cur.min(1 << 20) as libc::c_int
    } else {
        1 << 16
    }
}

/// The guardian: reads records until the host is gone, then kills every watched group.
///
/// # Safety
/// Only right after `fork`, in the child. Only async-signal-safe calls from here on: no
/// allocation, no lock, no panic path taken.
unsafe fn guardian_main(sock: RawFd, table: &mut [u32], max_fd: libc::c_int) -> ! {
    close_all_but(sock, max_fd);
    libc::setsid();
    // Handlers the host installed are its code: none runs here.
    let mut sig = 1;
    while sig < 32 {
        libc::signal(sig, libc::SIG_DFL);
        sig += 1;
    }
    for sig in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGPIPE,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    // A signal mask inherited from the forking thread would only delay ignored signals.
    let mut none: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut none);
    libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    libc::chdir(c"/".as_ptr());

    let mut count = 0usize;
    let mut buf = [0u8; 512];
    let mut have = 0usize;
    loop {
        let room = buf.len() - have;
        let n = libc::read(sock, buf.as_mut_ptr().add(have).cast(), room);
        if n < 0 {
            if *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break;
        }
        if n == 0 {
            break;
        }
        have += n as usize;
        let mut at = 0usize;
        while have - at >= 8 {
            let op = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let pgid = u32::from_ne_bytes([buf[at + 4], buf[at + 5], buf[at + 6], buf[at + 7]]);
            at += 8;
            if op == WATCH && count < table.len() {
                table[count] = pgid;
                count += 1;
            } else if op == FORGET {
                let mut i = 0;
                while i < count {
                    if table[i] == pgid {
                        count -= 1;
                        table[i] = table[count];
                        break;
                    }
                    i += 1;
                }
            }
        }
        // Keep a partial record for the next read.
        let rest = have - at;
        let mut i = 0;
        while i < rest {
            buf[i] = buf[at + i];
            i += 1;
        }
        have = rest;
    }
    // The host is gone.
    let mut i = 0;
    while i < count {
        libc::kill(-(table[i] as libc::pid_t), libc::SIGKILL);
        i += 1;
    }
    libc::_exit(0)
}

/// Closes every descriptor but `keep`.
unsafe fn close_all_but(keep: RawFd, max_fd: libc::c_int) {
    // close_range (Linux 5.9) does it in two calls; older kernels get the loop.
    let below =
        keep > 0 && libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32) == 0;
    let above = libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32) == 0;
    if !(below || keep == 0) || !above {
        let mut fd = 0;
        while fd < max_fd {
            if fd != keep {
                libc::close(fd);
            }
            fd += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guardian_keeps_no_descriptor_of_the_host_but_its_socket() {
        // A pipe of ours: the guardian must not hold its write end (a host's stdout, a server's
        // pipes), or whoever reads it would wait for the guardian.
        let mut p = [-1; 2];
        // SAFETY: pipe writes two descriptors.
        assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
        watch(u32::MAX >> 2); // a group id no process has
        let pid = pid().expect("the guardian runs");
        let fds = || -> Vec<String> {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        };
        // Right after the fork it still has them all: wait (bounded) for it to close them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut held = fds();
        while held.len() > 1 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
            held = fds();
        }
        forget(u32::MAX >> 2);
        // SAFETY: closing the pipe we made.
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
        assert_eq!(held.len(), 1, "the guardian holds {held:?}");
    }
}
