//! Exposed tool names: `mcp_<server>_<tool>`, safe for every model provider, stable across
//! runs (the tool cache depends on it), and unique without dropping any tool.
//!
//! Each part is lowercased; every run of characters outside `[a-z0-9_]` becomes one `_`;
//! repeated `_` collapse; `_` at the edges are trimmed; an empty part becomes `server` or
//! `tool`. A tool name that starts with `<server>_` drops that prefix. A name longer than
//! [`MAX_NAME_LEN`] keeps a prefix and ends in `_` and a short stable hash of the raw identity.
//! When two raw identities give one name, the identity `server\0tool` that sorts first keeps
//! the plain name and the others get the hash suffix.
//!
//! Names are never parsed back: callers route by a map from name to raw identity.

use std::collections::HashMap;

/// The longest exposed name (the limit most model providers enforce).
pub const MAX_NAME_LEN: usize = 64;

/// Hex digits of the stable hash suffix.
const HASH_LEN: usize = 8;

/// Sanitizes one part of a name: lowercase `[a-z0-9_]`, single `_` separators, no `_` at the
/// edges; `fallback` when nothing is left.
pub(crate) fn sanitize_part(raw: &str, fallback: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        fallback.to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The plain exposed name of one tool, before length and collision handling.
pub fn plain_name(server: &str, tool: &str) -> String {
    let s = sanitize_part(server, "server");
    let mut t = sanitize_part(tool, "tool");
    if let Some(rest) = t.strip_prefix(&format!("{s}_")) {
        if !rest.is_empty() {
            t = rest.to_owned();
        }
    }
    format!("mcp_{s}_{t}")
}

/// A short stable hash (FNV-1a, 32 bits, hex) of the raw identity `server\0tool`.
pub fn identity_hash(server: &str, tool: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in server.bytes().chain(std::iter::once(0)).chain(tool.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:0width$x}", width = HASH_LEN)
}

fn with_hash(name: &str, server: &str, tool: &str) -> String {
    let keep = MAX_NAME_LEN - HASH_LEN - 1;
    let prefix = name[..name.len().min(keep)].trim_end_matches('_');
    format!("{prefix}_{}", identity_hash(server, tool))
}

/// The prefix every exposed name of `server`'s tools starts with (`mcp_<server>_`, the server
/// part sanitized), unless the name was too long and ends in a hash instead.
pub fn exposed_prefix(server: &str) -> String {
    format!("mcp_{}_", sanitize_part(server, "server"))
}

/// The exposed name of one tool with no others to collide with.
pub fn exposed_name(server: &str, tool: &str) -> String {
    let plain = plain_name(server, tool);
    if plain.len() > MAX_NAME_LEN {
        with_hash(&plain, server, tool)
    } else {
        plain
    }
}

/// The exposed names of a set of tools, given as `(server, tool)` raw identities, in the same
/// order. Deterministic: the same set gives the same names in any order.
pub fn exposed_names<S: AsRef<str>, T: AsRef<str>>(identities: &[(S, T)]) -> Vec<String> {
    let names: Vec<String> = identities
        .iter()
        .map(|(s, t)| exposed_name(s.as_ref(), t.as_ref()))
        .collect();
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        owners.entry(n.as_str()).or_default().push(i);
    }
    let mut out = names.clone();
    for (name, mut idx) in owners {
        if idx.len() < 2 {
            continue;
        }
        let key = |i: &usize| {
            let (s, t) = &identities[*i];
            (s.as_ref().to_owned(), t.as_ref().to_owned())
        };
        idx.sort_by_key(key);
        idx.dedup_by_key(|i| key(i));
        for &i in &idx[1..] {
            let (s, t) = &identities[i];
            out[i] = with_hash(name, s.as_ref(), t.as_ref());
            log::info!(
                "tool name {name} is taken by {}/{}; {}/{} is exposed as {}",
                identities[idx[0]].0.as_ref(),
                identities[idx[0]].1.as_ref(),
                s.as_ref(),
                t.as_ref(),
                out[i]
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_each_part() {
        assert_eq!(plain_name("files", "read"), "mcp_files_read");
        assert_eq!(
            plain_name("My Server!", "get-Sum.v2"),
            "mcp_my_server_get_sum_v2"
        );
        assert_eq!(plain_name("__a__b__", "--x--"), "mcp_a_b_x");
        assert_eq!(plain_name("", "???"), "mcp_server_tool");
        assert_eq!(plain_name("s3", "put2"), "mcp_s3_put2", "digits are kept");
        assert_eq!(plain_name("Zürich", "größe"), "mcp_z_rich_gr_e");
    }

    #[test]
    fn drops_the_server_prefix_of_a_tool_name() {
        assert_eq!(
            plain_name("github", "github_create_issue"),
            "mcp_github_create_issue"
        );
        assert_eq!(plain_name("GitHub", "GitHub-search"), "mcp_github_search");
        assert_eq!(plain_name("github", "github_"), "mcp_github_github");
        assert_eq!(plain_name("git", "github_x"), "mcp_git_github_x");
    }

    #[test]
    fn long_names_keep_a_prefix_and_a_stable_hash() {
        let long = "a_very_long_tool_name_that_goes_on_and_on_and_on_forever_and_ever";
        let n = exposed_name("server", long);
        assert_eq!(n.len(), MAX_NAME_LEN);
        assert!(n.starts_with("mcp_server_a_very_long_tool_name"));
        assert_eq!(n, exposed_name("server", long), "stable");
        assert_ne!(n, exposed_name("server", &format!("{long}2")));
        assert_eq!(&n[n.len() - HASH_LEN..], identity_hash("server", long));
    }

    #[test]
    fn collisions_keep_every_tool_deterministically() {
        let ids = [("a", "Read File"), ("a", "read-file"), ("a", "read_file")];
        let names = exposed_names(&ids);
        // "a\0Read File" sorts first (uppercase before lowercase): it keeps the plain name.
        assert_eq!(names[0], "mcp_a_read_file");
        assert_ne!(names[1], names[2]);
        assert!(names[1].starts_with("mcp_a_read_file_"));
        let mut reversed = ids;
        reversed.reverse();
        let again = exposed_names(&reversed);
        assert_eq!(
            again,
            [names[2].clone(), names[1].clone(), names[0].clone()]
        );
    }

    #[test]
    fn servers_with_colliding_names_are_told_apart() {
        // '-' sorts before '_', so "my-server" keeps the plain name.
        let names = exposed_names(&[("my_server", "x"), ("my-server", "x")]);
        assert_eq!(names[1], "mcp_my_server_x");
        assert_eq!(
            names[0],
            format!("mcp_my_server_x_{}", identity_hash("my_server", "x"))
        );
    }
}
