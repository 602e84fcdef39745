//! The Linux sandbox's steps in the server's process, between `fork` and `exec`, in order:
//!
//! 1. a new user namespace and network namespace (`unshare`), mapping our user and group to
//!    themselves; the network namespace has only its own loopback, so nothing outside is
//!    reachable but through the proxy;
//! 2. the loopback interface up, and (when the server may reach any domain) a TCP listener on
//!    `127.0.0.1:`[`PROXY_PORT`](super::PROXY_PORT) inside the namespace, handed to our process
//!    over a socket pair (`SCM_RIGHTS`): our proxy accepts the server's connections there;
//! 3. every capability dropped, for good (the namespace's root powers are not kept across
//!    `exec`, even for a host running as root);
//! 4. `PR_SET_NO_NEW_PRIVS`, the seccomp filter (see `seccomp`), the Landlock ruleset (see
//!    `landlock`).
//!
//! Everything the steps need is built before the fork ([`Plan`]); after it they only make
//! system calls (no allocation, no lock: the host's other threads may hold them). A step that
//! fails makes the spawn fail with its error number; [`probe`] checks beforehand that the
//! kernel has what the steps need, so that the usual failure is named.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{landlock, seccomp};

/// What a sandboxed spawn needs in the child, made before the fork.
pub(crate) struct Plan {
    ruleset: OwnedFd,
    filter: Vec<seccomp::Instruction>,
    uid_map: CString,
    gid_map: CString,
    /// The child's end of the socket pair the proxy's listener is sent over (`None`: the
    /// server has no network at all).
    listener_to: Option<OwnedFd>,
}

/// Our end of the socket pair, where the listener arrives.
pub(crate) struct ListenerFrom(OwnedFd);

/// What the kernel lacks for the sandbox, or `None` when it has everything.
pub(crate) fn probe() -> Option<String> {
    if let Err(why) = landlock::abi() {
        return Some(why);
    }
    if let Err(why) = seccomp::filter() {
        return Some(why);
    }
    namespaces_missing()
}

/// Whether an unprivileged user namespace with a network namespace can be made here: a child
/// tries, and its exit status says.
fn namespaces_missing() -> Option<String> {
    // SAFETY: the child makes one system call and exits, without touching anything of ours.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: async-signal-safe calls only.
        unsafe {
            let r = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET);
            let errno = if r == 0 { 0 } else { *libc::__errno_location() };
            libc::_exit(errno.clamp(0, 255));
        }
    }
    if pid < 0 {
        return Some(format!(
            "user namespaces (cannot check: {})",
            std::io::Error::last_os_error()
        ));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut status = 0;
    loop {
        // SAFETY: our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if r < 0 || std::time::Instant::now() > deadline {
            // SAFETY: our own child, which may be stuck; reaped right after.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Some("user namespaces (the check did not finish)".to_owned());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => None,
        (true, errno) => Some(format!(
            "unprivileged user and network namespaces ({}: check user.max_user_namespaces, and kernel.apparmor_restrict_unprivileged_userns on Ubuntu)",
            std::io::Error::from_raw_os_error(errno)
        )),
        _ => Some("user namespaces (the check was killed)".to_owned()),
    }
}

impl Plan {
    /// Builds everything the child's steps need: the Landlock ruleset, the seccomp filter,
    /// the id maps, and (with `network`) the socket pair for the listener.
    pub(crate) fn new(
        rules: &super::Sandbox,
        writable: &[std::path::PathBuf],
        network: bool,
    ) -> Result<(Plan, Option<ListenerFrom>), String> {
        let abi = landlock::abi()?;
        let ruleset = landlock::ruleset(abi, writable, &rules.deny_read, &rules.deny_write)?;
        let filter = seccomp::filter()?;
        // SAFETY: plain id queries.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let map = |id: u32| CString::new(format!("{id} {id} 1\n")).unwrap_or_default();
        let (listener_to, from) = if network {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the pair.
            let r = unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                )
            };
            if r != 0 {
                return Err(format!(
                    "a socket pair for the proxy: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: the kernel just returned both descriptors to us.
            let (ours, theirs) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            (Some(theirs), Some(ListenerFrom(ours)))
        } else {
            (None, None)
        };
        let plan = Plan {
            ruleset,
            filter,
            uid_map: map(uid),
            gid_map: map(gid),
            listener_to,
        };
        Ok((plan, from))
    }

    /// The steps, in the child. Async-signal-safe: system calls on what the plan holds.
    pub(crate) fn apply(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY (the whole block): system calls on our own descriptors and buffers, in the
        // single-threaded child.
        unsafe {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                return fail();
            }
            if !write_file(c"/proc/self/setgroups", b"deny")
                || !write_file(c"/proc/self/uid_map", self.uid_map.as_bytes())
                || !write_file(c"/proc/self/gid_map", self.gid_map.as_bytes())
            {
                return fail();
            }
            if !loopback_up() {
                return fail();
            }
            if let Some(to) = &self.listener_to {
                if !listen_and_send(to.as_raw_fd()) {
                    return fail();
                }
            }
            if !drop_capabilities() {
                return fail();
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return fail();
            }
            let program = seccomp::program(&self.filter);
            if seccomp::install(&program) != 0 {
                return fail();
            }
            if landlock::restrict(self.ruleset.as_raw_fd()) != 0 {
                return fail();
            }
        }
        Ok(())
    }
}

impl ListenerFrom {
    /// The listener the child sent (once its steps ran: after the spawn returned), or `None`.
    pub(crate) fn receive(self) -> Option<std::net::TcpListener> {
        let mut data = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 4];
        // SAFETY: a zeroed msghdr is valid; the buffers outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: as above; MSG_DONTWAIT: the child sent before it exec'd, or never will.
        let n = unsafe {
            libc::recvmsg(
                self.0.as_raw_fd(),
                &mut msg,
                libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
            )
        };
        if n < 0 {
            return None;
        }
        // SAFETY: walking the control messages the kernel wrote into `control`.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            if cmsg.is_null()
                || (*cmsg).cmsg_level != libc::SOL_SOCKET
                || (*cmsg).cmsg_type != libc::SCM_RIGHTS
            {
                return None;
            }
            let fd: RawFd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
            Some(std::net::TcpListener::from_raw_fd(fd))
        }
    }
}

/// Writes `data` to the file `path` (in the child). Async-signal-safe.
unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    libc::close(fd);
    n == data.len() as isize
}

/// Brings the namespace's loopback interface up (in the child). Async-signal-safe.
unsafe fn loopback_up() -> bool {
    let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if fd < 0 {
        return false;
    }
    // `struct ifreq`: the name, then a union whose first member here is the flags.
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        _rest: [u8; 22],
    }
    let mut req = IfReq {
        name: [0; 16],
        flags: 0,
        _rest: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    let ok = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) == 0 && {
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &req) == 0
    };
    libc::close(fd);
    ok
}

/// Listens on the proxy's port inside the namespace and sends the listener over `to` (in the
/// child). Async-signal-safe.
unsafe fn listen_and_send(to: RawFd) -> bool {
    let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if fd < 0 {
        return false;
    }
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = super::PROXY_PORT.to_be();
    addr.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
    let bound = libc::bind(
        fd,
        (&addr as *const libc::sockaddr_in).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    ) == 0
        && libc::listen(fd, 128) == 0;
    let sent = bound && {
        let mut data = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 4];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast(), fd);
        libc::sendmsg(to, &msg, 0) == 1
    };
    libc::close(fd);
    sent
}

/// Drops every capability, and keeps an `exec` from granting any (in the child).
/// Async-signal-safe.
unsafe fn drop_capabilities() -> bool {
    // SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS, SECBIT_NO_CAP_AMBIENT_RAISE,
    // each with its lock bit (but KEEP_CAPS itself off).
    const SECURE_BITS: libc::c_ulong = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
    if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
        return false;
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let data = [
        Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        },
        Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        },
    ];
    libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr()) == 0
}
