//! Finding a server's program the way Windows users expect: a config says `npx`, and on Windows
//! that is `npx.cmd` somewhere on `PATH`. The system's own lookup (`CreateProcess`, and Rust's
//! `Command`) tries only `.exe`, which is why so many clients fail there with "spawn npx
//! ENOENT". The command shell's lookup is used instead: each extension of `PATHEXT`, in order,
//! in each directory of `PATH` (the server's own `PATH` when its config sets one).
//!
//! A `.cmd` or `.bat` found so is started by `Command`, which runs it through `cmd.exe /c` and
//! quotes each argument for it (refusing one it cannot quote safely); no command line is ever
//! put together here. The lookup itself is plain: it takes the variables and a test for a
//! file's existence, so it is tested on every platform.

use std::path::{Path, PathBuf};

/// What `PATHEXT` is when it is not set (the shell's default).
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The file `program` names, found with `path` and `pathext` (`;`-separated, as Windows keeps
/// them), relative names against `cwd`. `None` when nothing is found: the caller then starts
/// `program` as written and reports the system's error.
pub(crate) fn find(
    program: &str,
    path: Option<&str>,
    pathext: Option<&str>,
    cwd: &Path,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let extensions: Vec<&str> = pathext
        .unwrap_or(DEFAULT_PATHEXT)
        .split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect();
    let has_known_extension = Path::new(program)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| {
            extensions
                .iter()
                .any(|known| known[1..].eq_ignore_ascii_case(e))
        });
    let names: Vec<String> = if has_known_extension {
        vec![program.to_owned()]
    } else {
        extensions.iter().map(|e| format!("{program}{e}")).collect()
    };
    let is_path = program.contains(['/', '\\']) || program.get(1..2) == Some(":");
    let absolute = Path::new(program).is_absolute()
        || program.starts_with(['/', '\\'])
        || program.get(1..2) == Some(":");
    let dirs: Vec<PathBuf> = if absolute {
        vec![PathBuf::new()]
    } else if is_path {
        vec![cwd.to_path_buf()]
    } else {
        path.unwrap_or("")
            .split(';')
            .map(|d| d.trim().trim_matches('"'))
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect()
    };
    dirs.iter()
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| exists(candidate))
}

/// The value of variable `name` for the server: its own config's (names compared without case,
/// as Windows compares them), else this process's.
pub(crate) fn variable(env: &[(String, String)], name: &str) -> Option<String> {
    env.iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find` over a fake file system of `files`, which compares names without case and takes
    /// either slash, as Windows does.
    fn look(program: &str, path: &str, pathext: Option<&str>, files: &[&str]) -> Option<String> {
        let norm = |p: &Path| p.to_string_lossy().replace('\\', "/").to_lowercase();
        let file = |p: &Path| {
            files
                .iter()
                .find(|f| norm(Path::new(f)) == norm(p))
                .copied()
        };
        let found = find(program, Some(path), pathext, Path::new("/work"), &|p| {
            file(p).is_some()
        })?;
        file(&found).map(str::to_owned)
    }

    #[test]
    fn a_bare_name_is_found_with_each_extension_in_each_directory() {
        let files = ["/node/npx.cmd", "/node/npx", "/other/npx.exe"];
        // The first directory wins; in it, the first extension of PATHEXT that exists.
        assert_eq!(
            look("npx", "/node;/other", None, &files).as_deref(),
            Some("/node/npx.cmd")
        );
        assert_eq!(
            look("npx", "/other;/node", None, &files).as_deref(),
            Some("/other/npx.exe")
        );
        // The extension-less file (a Unix shell script npm also installs) is not a program.
        assert_eq!(look("npx", "/node", Some(".EXE"), &files), None);
        // PATHEXT's order, not the directory listing's.
        let both = ["/bin/uvx.bat", "/bin/uvx.exe"];
        assert_eq!(
            look("uvx", "/bin", Some(".BAT;.EXE"), &both).as_deref(),
            Some("/bin/uvx.bat")
        );
        assert_eq!(
            look("uvx", "/bin", Some(".EXE;.BAT"), &both).as_deref(),
            Some("/bin/uvx.exe")
        );
    }

    #[test]
    fn a_name_with_a_known_extension_is_looked_for_as_written() {
        let files = ["/node/npx.cmd", "/node/npx.cmd.exe"];
        assert_eq!(
            look("npx.cmd", "/node", None, &files).as_deref(),
            Some("/node/npx.cmd")
        );
        // Extensions compare without case, as Windows compares them.
        assert_eq!(
            look("npx.CMD", "/node", Some(".cmd"), &["/node/npx.CMD"]).as_deref(),
            Some("/node/npx.CMD")
        );
        // An unknown extension is part of the name: `server.py` looks for `server.py.exe`.
        assert_eq!(
            look("server.py", "/bin", None, &["/bin/server.py.exe"]).as_deref(),
            Some("/bin/server.py.exe")
        );
    }

    #[test]
    fn a_path_is_not_searched_for_in_path_and_resolves_against_the_working_directory() {
        assert_eq!(
            look("tools/server", "/bin", None, &["/bin/tools/server.exe"]),
            None
        );
        assert_eq!(
            look("tools/server", "/bin", None, &["/work/tools/server.cmd"]).as_deref(),
            Some("/work/tools/server.cmd")
        );
        assert_eq!(
            look(r"C:\node\npx", "", None, &[r"C:\node\npx.cmd"]).as_deref(),
            Some(r"C:\node\npx.cmd")
        );
    }

    #[test]
    fn path_entries_may_be_quoted_or_empty_and_pathext_may_be_odd() {
        let files = ["/Program Files/nodejs/npx.cmd"];
        assert_eq!(
            look("npx", ";\"/Program Files/nodejs\";;", None, &files).as_deref(),
            Some("/Program Files/nodejs/npx.cmd")
        );
        // Entries that are not extensions are ignored; an empty PATHEXT finds nothing.
        assert_eq!(
            look("npx", "/Program Files/nodejs", Some("CMD; ;.;.CMD"), &files).as_deref(),
            Some("/Program Files/nodejs/npx.cmd")
        );
        assert_eq!(look("npx", "/Program Files/nodejs", Some(""), &files), None);
        assert_eq!(look("npx", "", None, &files), None);
    }

    #[test]
    fn the_servers_own_variables_win_without_regard_to_case() {
        let env = vec![
            ("Path".to_owned(), "/a".to_owned()),
            ("PATH".to_owned(), "/b".to_owned()),
        ];
        assert_eq!(variable(&env, "PATH").as_deref(), Some("/b"));
        assert_eq!(variable(&env, "path").as_deref(), Some("/b"));
    }
}
