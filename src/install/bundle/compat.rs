//! Whether a bundle can run here: its `compatibility.platforms`, and its runtimes' version
//! ranges (`"node": ">=18.0.0"`, `"python": ">=3.10,<4"`) against the versions installed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::manifest::{platform, Manifest};

/// How long a runtime's `--version` may take.
const PROBE: Duration = Duration::from_secs(10);

/// Why the bundle cannot run here, each reason; empty when it can.
pub(crate) fn problems(manifest: &Manifest) -> Vec<String> {
    let mut out = Vec::new();
    let Some(compat) = &manifest.compatibility else {
        return out;
    };
    if let Some(platforms) = &compat.platforms {
        if !platforms.iter().any(|p| p == platform()) {
            out.push(format!(
                "it runs on {} only, not {}",
                platforms.join(", "),
                platform()
            ));
        }
    }
    for (runtime, range) in &compat.runtimes {
        // A uv server's Python is uv's to provide.
        if runtime == "python" && manifest.server.kind == "uv" {
            continue;
        }
        let programs: &[&str] = match runtime.as_str() {
            "node" => &["node"],
            "python" => &["python3", "python"],
            _ => continue,
        };
        match programs.iter().find_map(|p| installed(p)) {
            None => out.push(format!(
                "it needs {runtime} {range}, which is not installed"
            )),
            Some(version) => match satisfies(&version, range) {
                Some(true) => {}
                Some(false) => {
                    let shown: Vec<String> = version.iter().map(u64::to_string).collect();
                    out.push(format!(
                        "it needs {runtime} {range}; {} is installed",
                        shown.join(".")
                    ))
                }
                None => log::warn!("cannot read the {runtime} range {range:?}; not checked"),
            },
        }
    }
    out
}

/// `program --version`'s version (`v20.1.0`, `Python 3.11.7`), within [`PROBE`].
fn installed(program: &str) -> Option<Vec<u64>> {
    let mut child = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + PROBE;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let word = text.split_whitespace().find(|w| {
        w.trim_start_matches('v')
            .starts_with(|c: char| c.is_ascii_digit())
    })?;
    parse_version(word.trim_start_matches('v'))
}

fn parse_version(text: &str) -> Option<Vec<u64>> {
    let core = text.split(['-', '+']).next()?;
    let parts: Option<Vec<u64>> = core.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| !p.is_empty())
}

/// Whether `version` is in `range`: comparators (`>=`, `>`, `<=`, `<`, `=`, `^`, `~`, a bare
/// version, `x` wildcards) joined by spaces or commas (all must hold) and `||` (any side may).
/// `None` when the range cannot be read.
pub(crate) fn satisfies(version: &[u64], range: &str) -> Option<bool> {
    let mut any = false;
    for side in range.split("||") {
        let mut all = true;
        let words: Vec<&str> = side.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        if words.is_empty() {
            return None;
        }
        for word in words {
            all &= comparator(version, word)?;
        }
        any |= all;
    }
    Some(any)
}

fn comparator(version: &[u64], word: &str) -> Option<bool> {
    let (op, rest) = ["~=", "==", "!=", "<=", ">=", "<", ">", "=", "^", "~"]
        .iter()
        .find_map(|op| word.strip_prefix(op).map(|r| (*op, r)))
        .unwrap_or(("", word));
    let rest = rest.trim_start_matches('v');
    if rest == "*" || rest.eq_ignore_ascii_case("x") {
        return Some(true);
    }
    // Wildcards end the version: `18.x` is `18`.
    let given: Vec<u64> = rest
        .split('.')
        .take_while(|p| !matches!(*p, "x" | "X" | "*"))
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if given.is_empty() {
        return None;
    }
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    let cmp = |v: &[u64], w: &[u64]| {
        (0..3.max(w.len()))
            .map(|i| at(v, i).cmp(&at(w, i)))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    };
    // The versions a prefix covers: `18` is [18, 19), `3.10` is [3.10, 3.11).
    let prefix = |upto: usize| -> Option<Vec<u64>> {
        let mut next = given.get(..upto)?.to_vec();
        let last = next.last_mut()?;
        *last = last.checked_add(1)?;
        Some(next)
    };
    let wildcard = rest.ends_with(".*") || rest.ends_with(".x") || rest.ends_with(".X");
    use std::cmp::Ordering::*;
    Some(match op {
        // PEP 440: `==3.11` is exactly 3.11(.0), `==3.11.*` any 3.11; `!=` the opposite;
        // `~=3.10` is >=3.10 and 3.*, `~=3.10.2` >=3.10.2 and 3.10.*.
        "==" if wildcard => {
            cmp(version, &given) != Less && cmp(version, &prefix(given.len())?) == Less
        }
        "==" => cmp(version, &given) == Equal,
        "!=" if wildcard => {
            !(cmp(version, &given) != Less && cmp(version, &prefix(given.len())?) == Less)
        }
        "!=" => cmp(version, &given) != Equal,
        "~=" if given.len() < 2 => return None,
        "~=" => cmp(version, &given) != Less && cmp(version, &prefix(given.len() - 1)?) == Less,
        ">=" => cmp(version, &given) != Less,
        ">" if given.len() < 3 => cmp(version, &prefix(given.len())?) != Less,
        ">" => cmp(version, &given) == Greater,
        "<=" if given.len() < 3 => cmp(version, &prefix(given.len())?) == Less,
        "<=" => cmp(version, &given) != Greater,
        "<" => cmp(version, &given) == Less,
        "^" => {
            let first = given
                .iter()
                .position(|&p| p != 0)
                .unwrap_or(given.len() - 1);
            cmp(version, &given) != Less && cmp(version, &prefix(first + 1)?) == Less
        }
        "~" => {
            let upto = if given.len() > 1 { 2 } else { 1 };
            cmp(version, &given) != Less && cmp(version, &prefix(upto)?) == Less
        }
        // `=`, or a bare version: exactly, or within its prefix.
        _ => cmp(version, &given) != Less && cmp(version, &prefix(given.len())?) == Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ranges_read_as_npm_and_pep_440_write_them() {
        let v = |s: &str| parse_version(s).unwrap();
        for (version, range, expected) in [
            ("20.11.1", ">=18.0.0", true),
            ("16.20.0", ">=18.0.0", false),
            ("3.11.7", ">=3.8,<4.0", true),
            ("3.7.1", ">=3.8,<4.0", false),
            ("3.11.7", ">=3.8.0 <4", true),
            ("4.0.0", ">=3.8.0 <4", false),
            ("18.2.0", "18.x", true),
            ("19.0.0", "18.x", false),
            ("18.2.0", "^18.1", true),
            ("19.0.0", "^18.1", false),
            ("0.3.5", "^0.3.1", true),
            ("0.4.0", "^0.3.1", false),
            ("1.2.9", "~1.2.3", true),
            ("1.3.0", "~1.2.3", false),
            ("14.0.0", "<16 || >=18", true),
            ("17.0.0", "<16 || >=18", false),
            ("3.10.0", ">3.9", true),
            ("3.9.9", ">3.9", false),
            ("22.0.0", "*", true),
            ("3.11.0", "==3.11", true),
            ("3.11.4", "==3.11", false),
            ("3.11.4", "==3.11.*", true),
            ("3.12.0", "!=3.11.*", true),
            ("3.11.2", "!=3.11.*", false),
            ("3.12.1", "~=3.10", true),
            ("4.0.0", "~=3.10", false),
            ("3.10.9", "~=3.10.2", true),
            ("3.11.0", "~=3.10.2", false),
        ] {
            assert_eq!(
                satisfies(&v(version), range),
                Some(expected),
                "{version} {range}"
            );
        }
        assert_eq!(satisfies(&v("1.0.0"), ">=banana"), None);
        assert_eq!(satisfies(&v("1.0.0"), ""), None);
        assert_eq!(satisfies(&v("1.0.0"), ">18446744073709551615"), None);
        assert_eq!(satisfies(&v("1.0.0"), "~=3"), None);
    }
}
