//! The seccomp filter of a sandboxed server: no new Unix socket (`socket(AF_UNIX, ...)`: a
//! socket file such as `$SSH_AUTH_SOCK` or `/var/run/docker.sock` is reachable through any
//! read-only view of the file system, and Landlock does not cover `connect`), no `io_uring`
//! (whose requests the filter would not see), and no leaving the process group (`setsid`,
//! `setpgid`: a teardown signals the server's whole group). `socketpair` stays allowed (Node
//! and libuv make their child processes' pipes with it). Each refused call fails with `EPERM`;
//! a system call of another architecture's table (x32, i386) kills the process.
//!
//! The program is built in our process and installed in the child (one `prctl` there).

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Instruction {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
pub(crate) struct Program {
    len: libc::c_ushort,
    filter: *const Instruction,
}

/// `BPF_LD | BPF_W | BPF_ABS` (the first two are zero).
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;

/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const ARG0: u32 = 16;

/// This architecture's audit number, the calls refused, and `socket`'s number.
#[cfg(target_arch = "x86_64")]
const TABLE: Option<(u32, &[u32], u32)> = Some((
    0xC000_003E,
    &[
        112, /* setsid */
        109, /* setpgid */
        425, 426, 427, /* io_uring */
    ],
    41,
));
#[cfg(target_arch = "aarch64")]
const TABLE: Option<(u32, &[u32], u32)> = Some((
    0xC000_00B7,
    &[
        157, /* setsid */
        154, /* setpgid */
        425, 426, 427, /* io_uring */
    ],
    198,
));
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const TABLE: Option<(u32, &[u32], u32)> = None;

fn op(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

/// The filter, or why this architecture has none.
pub(crate) fn filter() -> Result<Vec<Instruction>, String> {
    let (arch, refused, socket) = TABLE.ok_or_else(|| {
        "a seccomp filter for this processor architecture (only x86-64 and AArch64 have one)"
            .to_owned()
    })?;
    let x32 = cfg!(target_arch = "x86_64");
    // The layout, with the three returns at the end:
    //   ld arch; jeq arch ? next : kill
    //   ld nr; [jge 0x40000000 ? errno : next]
    //   jeq refused[i] ? errno : next        (each)
    //   jeq socket ? next : allow
    //   ld arg0; jeq AF_UNIX ? errno : allow
    //   ret allow; ret errno(EPERM); ret kill
    let mut program = vec![op(LD_W_ABS, ARCH, 0, 0)];
    let body = 3 + usize::from(x32) + refused.len() + 3;
    // Jumps are relative to the next instruction; the returns sit at `body`, `body + 1`, `body + 2`.
    let to = |from: usize, target: usize| (target - from - 1) as u8;
    let (allow, errno, kill) = (body, body + 1, body + 2);
    program.push(op(JEQ_K, arch, 0, to(1, kill)));
    program.push(op(LD_W_ABS, NR, 0, 0));
    if x32 {
        let at = program.len();
        program.push(op(JGE_K, 0x4000_0000, to(at, errno), 0));
    }
    for nr in refused {
        let at = program.len();
        program.push(op(JEQ_K, *nr, to(at, errno), 0));
    }
    let at = program.len();
    program.push(op(JEQ_K, socket, 0, to(at, allow)));
    program.push(op(LD_W_ABS, ARG0, 0, 0));
    let at = program.len();
    program.push(op(
        JEQ_K,
        libc::AF_UNIX as u32,
        to(at, errno),
        to(at, allow),
    ));
    debug_assert_eq!(program.len(), body);
    program.push(op(RET_K, RET_ALLOW, 0, 0));
    program.push(op(RET_K, RET_ERRNO | libc::EPERM as u32, 0, 0));
    program.push(op(RET_K, RET_KILL_PROCESS, 0, 0));
    Ok(program)
}

/// The program header for `filter` (which must outlive it).
pub(crate) fn program(filter: &[Instruction]) -> Program {
    Program {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_ptr(),
    }
}

/// Installs the filter in the calling process (the child, after `PR_SET_NO_NEW_PRIVS`).
/// Async-signal-safe: one system call.
pub(crate) fn install(program: &Program) -> libc::c_int {
    // SAFETY: `program` points at a filter that outlives the call.
    unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            program as *const Program,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter on one call, as the kernel would (only the instructions it uses).
    fn run(program: &[Instruction], arch: u32, nr: u32, arg0: u32) -> u32 {
        let mut pc = 0;
        let mut acc = 0u32;
        loop {
            let i = program[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => {
                    acc = match i.k {
                        NR => nr,
                        ARCH => arch,
                        ARG0 => arg0,
                        other => panic!("load of {other}"),
                    }
                }
                JEQ_K => pc += usize::from(if acc == i.k { i.jt } else { i.jf }),
                JGE_K => pc += usize::from(if acc >= i.k { i.jt } else { i.jf }),
                RET_K => return i.k,
                other => panic!("opcode {other}"),
            }
        }
    }

    #[test]
    fn unix_sockets_and_leaving_the_group_are_refused_the_rest_allowed() {
        let Some((arch, refused, socket)) = TABLE else {
            assert!(filter().is_err());
            return;
        };
        let p = filter().unwrap();
        let eperm = RET_ERRNO | libc::EPERM as u32;
        assert_eq!(run(&p, arch, socket, libc::AF_UNIX as u32), eperm);
        assert_eq!(run(&p, arch, socket, libc::AF_INET as u32), RET_ALLOW);
        assert_eq!(run(&p, arch, socket, libc::AF_INET6 as u32), RET_ALLOW);
        for nr in refused {
            assert_eq!(run(&p, arch, *nr, 0), eperm, "call {nr}");
        }
        assert_eq!(run(&p, arch, 0, 0), RET_ALLOW, "read");
        assert_eq!(run(&p, arch ^ 1, 0, 0), RET_KILL_PROCESS, "another table");
        if cfg!(target_arch = "x86_64") {
            assert_eq!(run(&p, arch, 0x4000_0000 | socket, 1), eperm, "x32");
        }
    }
}
