//! The crate's layers, checked: wire → net → transport → client → config → manager → tools →
//! host, with auth beside the transport (both on the net). A module may use its own layer and the ones below it, by a
//! `use` or by an inline `crate::` / `super::` path; a use of a layer above fails this test,
//! naming the file, the line and the two layers. Comments and doc links do not count.

use std::path::{Path, PathBuf};

/// The layer of a module path (`client::session`, `auth::flow`), bottom first.
fn layer(module: &[&str]) -> Option<(u8, &'static str)> {
    Some(match module {
        // Shared by every layer: the one error, the cancel token, a sleeping lock, private files.
        ["error" | "cancel" | "sleep_lock" | "files" | "hex" | "panic" | "text", ..] => (0, "wire"),
        ["jsonrpc" | "protocol", ..] => (0, "wire"),
        ["net", ..] => (1, "net"),
        ["transport", ..] => (2, "transport"),
        ["auth", ..] => (3, "auth"),
        ["client", ..] => (4, "client"),
        ["config" | "install", ..] => (5, "config"),
        ["manager", ..] => (6, "manager"),
        ["tool", ..] => (7, "tools"),
        ["host", ..] => (8, "host"),
        _ => return None,
    })
}

/// Uses of a layer above their own that are known and owned by an open piece of work: each
/// names the two layers and why it is still there. An entry that no longer occurs fails the
/// test too, so this list only shrinks.
const KNOWN: &[(&str, &str, &str)] = &[];

/// One use of a layer above: (file, line number, from layer, to layer, the text).
type Violation = (String, usize, &'static str, &'static str, String);

/// The module path of a source file (`src/client/mod.rs` → `client`, `src/auth/flow.rs`
/// → `auth::flow`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The module paths a line of code names: `crate::a::b`, and `super::...` resolved from
/// `module` (the file's own module).
fn paths_in(line: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    for (start, _) in line
        .match_indices("crate::")
        .chain(line.match_indices("super::"))
    {
        // A whole word only (not `my_crate::`, `supersuper::`).
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let rest = &line[start..];
        let prefix = rest
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .next()
            .unwrap_or("");
        let words: Vec<&str> = prefix.split("::").filter(|w| !w.is_empty()).collect();
        // `crate::{a::B, C}`: a path for each name of the group (one level of braces).
        let group: Vec<Vec<&str>> = match rest[prefix.len()..].strip_prefix('{') {
            Some(inside) => inside
                .split('}')
                .next()
                .unwrap_or("")
                .split(',')
                .map(|item| item.split(" as ").next().unwrap_or("").trim())
                .filter(|item| !item.is_empty() && !item.contains('{'))
                .map(|item| item.split("::").collect())
                .collect(),
            None => vec![Vec::new()],
        };
        let mut path: Vec<String> = if words.first() == Some(&"crate") {
            Vec::new()
        } else {
            // `super` is the parent of the file's module.
            let mut base = module.to_vec();
            base.pop();
            base
        };
        let mut supers = 0;
        for w in &words {
            match *w {
                "crate" => {}
                "super" => {
                    supers += 1;
                    if supers > 1 {
                        path.pop();
                    }
                }
                w => path.push(w.to_owned()),
            }
        }
        for item in group {
            let mut full = path.clone();
            full.extend(
                item.iter()
                    .filter(|w| **w != "self")
                    .map(|w| (*w).to_owned()),
            );
            out.push(full);
        }
    }
    out
}

/// The names the crate root re-exports (`pub use manager::{McpManager, ...};` in `lib.rs`), each
/// with the module path it stands for: `crate::McpManager` is the manager's.
fn root_reexports(lib: &str) -> Vec<(String, Vec<String>)> {
    let code: Vec<&str> = lib
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    let mut out = Vec::new();
    for statement in code.join(" ").split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim().trim_start_matches("crate::");
        let (base, names) = match rest.split_once("::{") {
            Some((base, group)) => (base, group.trim_end_matches('}').split(',').collect()),
            None => match rest.rsplit_once("::") {
                Some((base, name)) => (base, vec![name]),
                None => continue,
            },
        };
        for name in names {
            // `a::B` inside a group, and `B as C`: C stands for base::a.
            let name = name.trim();
            let (inner, alias) = match name.split_once(" as ") {
                Some((inner, alias)) => (inner.trim(), alias.trim()),
                None => (name, name.rsplit("::").next().unwrap_or(name)),
            };
            if alias.is_empty() || alias == "self" {
                continue;
            }
            let mut module: Vec<String> = base.split("::").map(|w| w.trim().to_owned()).collect();
            let mut words: Vec<&str> = inner.split("::").map(str::trim).collect();
            words.pop();
            module.extend(words.into_iter().map(str::to_owned));
            out.push((alias.to_owned(), module));
        }
    }
    out
}

/// Every use of a layer above in the given files (path, text).
fn violations(src: &Path, files: &[(PathBuf, String)]) -> Vec<Violation> {
    let lib = src.join("lib.rs");
    let reexported = (files.iter())
        .find(|(f, _)| *f == lib)
        .map_or_else(Vec::new, |(_, text)| root_reexports(text));
    let mut out = Vec::new();
    for (file, text) in files {
        let module = module_of(src, file);
        let names: Vec<&str> = module.iter().map(String::as_str).collect();
        let Some((mine, my_name)) = layer(&names) else {
            continue;
        };
        // The unit tests at the end of a file may reach anywhere.
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
        // So are the files that hold a module's unit tests (`tests.rs`, `grant_tests.rs`).
        if file.to_string_lossy().ends_with("tests.rs") {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") || trimmed.starts_with("#[doc") {
                continue;
            }
            // Code before a trailing comment (a `//` inside a string is rare in paths).
            let line = match line.find(" // ") {
                Some(at) => &line[..at],
                None => line,
            };
            for mut path in paths_in(line, &module) {
                // A name the root re-exports is its module's.
                if let Some((_, home)) = (reexported.iter()).find(|(n, _)| path.first() == Some(n))
                {
                    path.splice(..1, home.iter().cloned());
                }
                let names: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Some((theirs, their_name)) = layer(&names) {
                    if theirs > mine {
                        out.push((
                            file.display().to_string(),
                            n + 1,
                            my_name,
                            their_name,
                            line.trim().to_owned(),
                        ));
                    }
                }
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // The `mcp` command is a user of the library, not one of its layers.
            if path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let found = violations(&src, &files);
    let unknown: Vec<&Violation> = found
        .iter()
        .filter(|v| !KNOWN.iter().any(|(from, to, _)| *from == v.2 && *to == v.3))
        .collect();
    assert!(
        unknown.is_empty(),
        "uses of a layer above:\n{}",
        unknown
            .iter()
            .map(|(f, n, from, to, text)| format!("  {f}:{n}: {from} uses {to}: {text}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for (from, to, why) in KNOWN {
        assert!(
            found.iter().any(|v| v.2 == *from && v.3 == *to),
            "{from} no longer uses {to} ({why}): take the entry out of KNOWN"
        );
    }
}

#[test]
fn a_planted_violation_is_found_by_use_by_inline_path_and_by_super() {
    let src = Path::new("/x/src");
    let planted = |file: &str, text: &str| vec![(src.join(file), text.to_owned())];
    // `use` of a layer above.
    let v = violations(
        src,
        &planted("client/mod.rs", "use crate::manager::McpManager;\n"),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].2, v[0].3, v[0].1), ("client", "manager", 1));
    // An inline path in an expression.
    let v = violations(
        src,
        &planted(
            "transport/http.rs",
            "fn f() {\n    let x = crate::config::home_dir();\n}\n",
        ),
    );
    assert_eq!((v[0].2, v[0].3, v[0].1), ("transport", "config", 2));
    // The net is below the transports and auth: it may not reach into either.
    let v = violations(
        src,
        &planted(
            "net/exchange.rs",
            "use super::url;\nfn f() -> usize { crate::transport::web::X }\n",
        ),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].2, v[0].3, v[0].1), ("net", "transport", 2));
    // `super::super::` out of a folder, into a layer above.
    let v = violations(
        src,
        &planted(
            "transport/http/session.rs",
            "use super::super::super::config::ServerConfig;\nuse super::Shared;\n",
        ),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].2, v[0].3), ("transport", "config"));
    // A file in a module's folder is that module's child: `super::super` from
    // `auth/provider/refresh.rs` is auth itself, and one more `super` is the crate root.
    let v = violations(
        src,
        &planted(
            "auth/provider/refresh.rs",
            "use super::super::{error, OAuthErrorKind};\nuse super::super::super::manager::McpManager;\n",
        ),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].2, v[0].3, v[0].1), ("auth", "manager", 2));
    // A name the root re-exports is its own module's: `crate::McpManager` is the manager's.
    let with_lib = |file: &str, text: &str| {
        let lib = "pub use client::{Client, Endpoint};\npub use manager::{\n    ManagerOptions, McpManager,\n};\n";
        violations(
            src,
            &[
                (src.join("lib.rs"), lib.to_owned()),
                (src.join(file), text.to_owned()),
            ],
        )
    };
    let v = with_lib("client/mod.rs", "fn f(m: &crate::McpManager) {}\n");
    assert_eq!((v[0].2, v[0].3, v[0].1), ("client", "manager", 1), "{v:?}");
    // Each name of a group counts: `Endpoint` is the client's own, `McpManager` is not.
    let v = with_lib("client/mod.rs", "use crate::{Endpoint, McpManager};\n");
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!((v[0].2, v[0].3), ("client", "manager"));
    let v = with_lib(
        "transport/mod.rs",
        "use crate::{error::Error, manager::Managed};\n",
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(with_lib("manager/mod.rs", "use crate::Client;\n").is_empty());
    // Downward uses, comments and doc links are fine; so are the unit tests.
    let v = violations(
        src,
        &planted(
            "manager/mod.rs",
            "use crate::client::Client;\n/// See [`crate::host::loader`].\n// crate::host::session\nuse super::cache;\n#[cfg(test)]\nmod tests {\n    use crate::host::loader::x;\n}\n",
        ),
    );
    assert!(v.is_empty(), "{v:?}");
}
