//! Landlock: the kernel's file-system allow-list, built in our process and applied in the
//! server's between `fork` and `exec` (one system call there).
//!
//! Landlock only grants, so "everything but `denyRead`" is built from the paths around each
//! denied one: every directory on the way down to it may be listed (`READ_DIR`, which Landlock
//! extends to the whole tree below, so the names in a denied directory stay listable, its
//! files' contents do not), and every sibling on the way is granted whole. A symbolic link is
//! never granted: access through it is decided at its target. The same construction makes
//! `allowWrite` less `denyWrite`. The price of the construction: a new entry made later
//! directly in a directory on the way to a denied path is not readable (nor, on the way to a
//! write-denied one, writable) by the server; a new entry elsewhere is.
//!
//! The raw system calls are ours rather than the `landlock` crate's: the ruleset is built here
//! and the restriction happens in the child, where nothing may allocate, and the crate's API is
//! built around restricting the calling thread.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const SYS_CREATE_RULESET: libc::c_long = 444;
const SYS_ADD_RULE: libc::c_long = 445;
const SYS_RESTRICT_SELF: libc::c_long = 446;
const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
const REFER: u64 = 1 << 13;
/// ABI 3.
const TRUNCATE: u64 = 1 << 14;
/// ABI 6: no connecting to an abstract Unix socket, nor signalling a process, outside.
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// What reading is.
const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
/// The rights that apply to a file that is not a directory.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;
/// The most rules one server's ruleset gets (each is an open and a system call).
const MAX_RULES: usize = 20_000;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version of this kernel, or why there is none.
pub(crate) fn abi() -> Result<u32, String> {
    // SAFETY: the version query takes no pointer.
    let v = unsafe {
        libc::syscall(
            SYS_CREATE_RULESET,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return Ok(v as u32);
    }
    let e = std::io::Error::last_os_error();
    Err(match e.raw_os_error() {
        Some(libc::ENOSYS) => {
            "Landlock (the kernel has none: Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
                .to_owned()
        }
        Some(libc::EOPNOTSUPP) => {
            "Landlock (built into the kernel but not enabled: add it to the lsm= boot parameter)"
                .to_owned()
        }
        _ => format!("Landlock ({e})"),
    })
}

/// The write rights of an ABI.
fn write_rights(abi: u32) -> u64 {
    let mut rights = WRITE_FILE
        | REMOVE_DIR
        | REMOVE_FILE
        | MAKE_CHAR
        | MAKE_DIR
        | MAKE_REG
        | MAKE_SOCK
        | MAKE_FIFO
        | MAKE_BLOCK
        | MAKE_SYM;
    if abi >= 2 {
        rights |= REFER;
    }
    if abi >= 3 {
        rights |= TRUNCATE;
    }
    rights
}

/// One grant: `rights` on the tree at `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) path: PathBuf,
    pub(crate) rights: u64,
}

/// The grants that give `rights` on every tree in `trees` except the trees in `except`:
/// `on_the_way` on each directory between a tree and an excepted path, `rights` on every
/// sibling there. `list` lists a directory (names, and whether each is a symbolic link).
pub(crate) fn grants(
    trees: &[PathBuf],
    except: &[PathBuf],
    rights: u64,
    on_the_way: u64,
    list: &dyn Fn(&Path) -> Vec<(PathBuf, bool)>,
    out: &mut Vec<Grant>,
) -> Result<(), String> {
    for tree in trees {
        grant_tree(tree, except, rights, on_the_way, list, out)?;
    }
    Ok(())
}

fn grant_tree(
    tree: &Path,
    except: &[PathBuf],
    rights: u64,
    on_the_way: u64,
    list: &dyn Fn(&Path) -> Vec<(PathBuf, bool)>,
    out: &mut Vec<Grant>,
) -> Result<(), String> {
    if out.len() > MAX_RULES {
        return Err(format!(
            "the sandbox's rules would need more than {MAX_RULES} paths (a directory on the way to a denied path is too large)"
        ));
    }
    if except.iter().any(|e| tree.starts_with(e)) {
        return Ok(());
    }
    if !except.iter().any(|e| e.starts_with(tree)) {
        out.push(Grant {
            path: tree.to_path_buf(),
            rights,
        });
        return Ok(());
    }
    if on_the_way != 0 {
        out.push(Grant {
            path: tree.to_path_buf(),
            rights: on_the_way,
        });
    }
    for (child, is_link) in list(tree) {
        if !is_link {
            grant_tree(&child, except, rights, on_the_way, list, out)?;
        }
    }
    Ok(())
}

/// A directory's entries, from the file system.
pub(crate) fn list_dir(dir: &Path) -> Vec<(PathBuf, bool)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let link = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
            (e.path(), link)
        })
        .collect()
}

/// A path as the kernel sees it: its links resolved where it exists.
pub(crate) fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The ruleset for reading all but `deny_read`, and writing `allow_write` less `deny_write`
/// (and less `deny_read`). Its descriptor is handed to [`restrict`] in the child.
pub(crate) fn ruleset(
    abi: u32,
    allow_write: &[PathBuf],
    deny_read: &[PathBuf],
    deny_write: &[PathBuf],
) -> Result<OwnedFd, String> {
    let write = write_rights(abi);
    let deny_read: Vec<PathBuf> = deny_read.iter().map(|p| real(p)).collect();
    let mut unwritable: Vec<PathBuf> = deny_write.iter().map(|p| real(p)).collect();
    unwritable.extend(deny_read.iter().cloned());
    let writable: Vec<PathBuf> = allow_write.iter().map(|p| real(p)).collect();
    let mut all = Vec::new();
    grants(
        &[PathBuf::from("/")],
        &deny_read,
        READ,
        READ_DIR,
        &list_dir,
        &mut all,
    )?;
    grants(&writable, &unwritable, write, 0, &list_dir, &mut all)?;
    let (attr, size) = (
        RulesetAttr {
            handled_access_fs: READ | write,
            handled_access_net: 0,
            scoped: if abi >= 6 {
                SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            } else {
                0
            },
        },
        if abi >= 6 {
            std::mem::size_of::<RulesetAttr>()
        } else {
            8
        },
    );
    // SAFETY: `attr` outlives the call and `size` is at most its size.
    let fd = unsafe { libc::syscall(SYS_CREATE_RULESET, &attr as *const RulesetAttr, size, 0u32) };
    if fd < 0 {
        return Err(format!(
            "Landlock ruleset: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the kernel just returned this descriptor to us.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    for grant in &all {
        add(&ruleset, grant)?;
    }
    Ok(ruleset)
}

/// Adds one grant (a path that vanished since it was listed is skipped).
fn add(ruleset: &OwnedFd, grant: &Grant) -> Result<(), String> {
    let Ok(name) = CString::new(grant.path.as_os_str().as_bytes()) else {
        return Ok(());
    };
    // SAFETY: a NUL-terminated path; O_PATH opens without reading.
    let fd = unsafe { libc::open(name.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Ok(());
    }
    // SAFETY: we own `fd`.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let is_dir = std::fs::metadata(&grant.path).is_ok_and(|m| m.is_dir());
    let rights = if is_dir {
        grant.rights
    } else {
        grant.rights & FILE_RIGHTS
    };
    if rights == 0 {
        return Ok(());
    }
    let rule = PathBeneath {
        allowed_access: rights,
        parent_fd: fd.as_raw_fd(),
    };
    // SAFETY: `rule` outlives the call; both descriptors are open.
    let r = unsafe {
        libc::syscall(
            SYS_ADD_RULE,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &rule as *const PathBeneath,
            0u32,
        )
    };
    if r < 0 {
        return Err(format!(
            "Landlock rule for {}: {}",
            grant.path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Applies the ruleset to the calling process (the child, after `PR_SET_NO_NEW_PRIVS`).
/// Async-signal-safe: one system call.
pub(crate) fn restrict(ruleset: RawFd) -> libc::c_long {
    // SAFETY: a system call on a descriptor the parent keeps open across the fork.
    unsafe { libc::syscall(SYS_RESTRICT_SELF, ruleset, 0u32) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up tree: `/`, `/home`, `/home/u`, `/home/u/.ssh`, `/home/u/code`,
    /// `/home/u/link` (a link), `/etc`.
    fn list(dir: &Path) -> Vec<(PathBuf, bool)> {
        let kids: &[(&str, bool)] = match dir.to_str().unwrap() {
            "/" => &[("/home", false), ("/etc", false)],
            "/home" => &[("/home/u", false)],
            "/home/u" => &[
                ("/home/u/.ssh", false),
                ("/home/u/code", false),
                ("/home/u/link", true),
            ],
            "/home/u/code" => &[("/home/u/code/.git", false), ("/home/u/code/src", false)],
            _ => &[],
        };
        kids.iter().map(|(p, l)| (PathBuf::from(p), *l)).collect()
    }

    fn paths(grants: &[Grant], rights: u64) -> Vec<&str> {
        let mut out: Vec<&str> = (grants.iter())
            .filter(|g| g.rights == rights)
            .map(|g| g.path.to_str().unwrap())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn everything_but_a_denied_tree_is_granted_through_its_siblings() {
        let mut out = Vec::new();
        let deny = [PathBuf::from("/home/u/.ssh")];
        grants(
            &[PathBuf::from("/")],
            &deny,
            READ,
            READ_DIR,
            &list,
            &mut out,
        )
        .unwrap();
        assert_eq!(paths(&out, READ_DIR), ["/", "/home", "/home/u"]);
        assert_eq!(paths(&out, READ), ["/etc", "/home/u/code"]);
        assert!(
            !out.iter()
                .any(|g| g.path.starts_with("/home/u/.ssh") || g.path.starts_with("/home/u/link")),
            "neither the denied tree nor a link is granted"
        );
        let mut whole = Vec::new();
        grants(
            &[PathBuf::from("/")],
            &[],
            READ,
            READ_DIR,
            &list,
            &mut whole,
        )
        .unwrap();
        assert_eq!(paths(&whole, READ), ["/"], "nothing denied: one rule");
    }

    #[test]
    fn a_writable_tree_less_a_denied_one_and_a_denied_tree_itself() {
        let mut out = Vec::new();
        let write = write_rights(7);
        let trees = [PathBuf::from("/home/u/code")];
        grants(
            &trees,
            &[PathBuf::from("/home/u/code/.git")],
            write,
            0,
            &list,
            &mut out,
        )
        .unwrap();
        assert_eq!(paths(&out, write), ["/home/u/code/src"]);
        assert_eq!(
            out.len(),
            1,
            "nothing on the way when the way grants nothing"
        );
        let mut none = Vec::new();
        grants(
            &trees,
            &[PathBuf::from("/home/u")],
            write,
            0,
            &list,
            &mut none,
        )
        .unwrap();
        assert!(none.is_empty(), "a tree inside a denied one gets nothing");
    }

    #[test]
    fn this_kernel_answers_the_version_query() {
        // Either a version or a reason naming Landlock: never a panic, never zero.
        match abi() {
            Ok(v) => assert!(v >= 1),
            Err(why) => assert!(why.contains("Landlock"), "{why}"),
        }
    }
}
