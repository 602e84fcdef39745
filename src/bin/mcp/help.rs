//! `mcp help [COMMAND]`, `mcp COMMAND --help` and `mcp completions bash|zsh|fish`, all read
//! from the one help text (`args::USAGE`), so a command or an option added there is in every
//! one of them.

use crate::args::USAGE;

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// `SHELL` parsed.
pub fn shell(name: &str) -> Result<Shell, String> {
    match name {
        "bash" => Ok(Shell::Bash),
        "zsh" => Ok(Shell::Zsh),
        "fish" => Ok(Shell::Fish),
        other => Err(format!(
            "completions are written for bash, zsh or fish, not {other:?}"
        )),
    }
}

/// The lines of one section of the help (after its `name:` line, up to the blank line).
fn section(name: &'static str) -> impl Iterator<Item = &'static str> {
    USAGE
        .lines()
        .skip_while(move |l| *l != name)
        .skip(1)
        .take_while(|l| !l.is_empty())
}

/// Every command's entry: its first word, its synopsis and its description.
fn entries() -> Vec<(&'static str, String, String)> {
    let mut out: Vec<(&'static str, String, String)> = Vec::new();
    for line in section("commands:") {
        let Some(text) = line.strip_prefix("  ") else {
            continue;
        };
        if text.starts_with(' ') {
            // A continuation of the last entry's description.
            if let Some(last) = out.last_mut() {
                if !last.2.is_empty() {
                    last.2.push(' ');
                }
                last.2.push_str(text.trim());
            }
            continue;
        }
        let (synopsis, description) = match text.get(..23) {
            // The description column: a synopsis padded to it with two spaces at least.
            Some(head) if text.len() > 23 && head.ends_with("  ") => {
                (head.trim_end(), text[23..].trim())
            }
            _ => (text.trim_end(), ""),
        };
        let word = synopsis.split_whitespace().next().unwrap_or("");
        if word.starts_with('(') {
            continue;
        }
        out.push((word, synopsis.to_owned(), description.to_owned()));
    }
    out
}

/// The command names, in the help's order.
pub fn commands() -> Vec<&'static str> {
    entries().into_iter().map(|(w, _, _)| w).collect()
}

/// The long options (and their short forms), in the help's order.
fn options() -> Vec<&'static str> {
    let mut out = Vec::new();
    for line in section("options:") {
        let text = line.trim_start();
        if line.len() - text.len() != 2 {
            continue;
        }
        for word in text.split([',', ' ']).take_while(|w| w.starts_with('-')) {
            if !word.is_empty() {
                out.push(word);
            }
        }
    }
    out
}

/// The options that take a file or directory.
const PATH_OPTIONS: [&str; 6] = [
    "--config",
    "--cwd",
    "--cache-dir",
    "--ca-file",
    "--client-cert",
    "--client-key",
];

/// `word` as a command name, or an error with the nearest names.
pub fn known(word: &str) -> Result<&'static str, String> {
    let names = commands();
    if let Some(found) = names.iter().find(|n| **n == word) {
        return Ok(found);
    }
    let mut near: Vec<(usize, &str)> = names
        .iter()
        .map(|n| (distance(word, n), *n))
        .filter(|(d, n)| *d <= 2 || n.starts_with(word))
        .collect();
    near.sort();
    let hint = match near.first() {
        Some((_, n)) => format!("; did you mean {n}?"),
        None => String::new(),
    };
    Err(format!("no command {word:?}{hint} (see mcp help)"))
}

/// The edit distance between two short words.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The help of one command.
pub fn for_command(command: &str) -> String {
    let (_, synopsis, description) = entries()
        .into_iter()
        .find(|(w, _, _)| *w == command)
        .expect("a known command");
    format!(
        "usage: mcp [OPTIONS] {synopsis}\n\n{}\n\nThe options and exit statuses of every command: mcp --help\n",
        wrap(&description, 80)
    )
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let command_words = commands().join(" ");
    let option_words = options().join(" ");
    let paths = PATH_OPTIONS.join("|");
    match shell {
        Shell::Bash => format!(
            r#"# bash completion for mcp (mcp completions bash)
_mcp() {{
    local cur prev i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    case "$prev" in
        {paths})
            COMPREPLY=($(compgen -f -- "$cur"))
            return
            ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "{option_words}" -- "$cur"))
        return
    fi
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -*) ;;
            *) return ;;
        esac
    done
    COMPREPLY=($(compgen -W "{command_words}" -- "$cur"))
}}
complete -o default -F _mcp mcp
"#
        ),
        Shell::Zsh => {
            let described: Vec<String> = entries()
                .into_iter()
                .map(|(w, _, d)| {
                    let first = d.split(['(', ';', ':']).next().unwrap_or("").trim();
                    format!("        '{w}:{}'", first.replace(['\'', ':'], ""))
                })
                .collect();
            let opts: Vec<String> = options()
                .into_iter()
                .map(|o| {
                    if PATH_OPTIONS.contains(&o) {
                        format!("        '{o}[{o}]:path:_files'")
                    } else {
                        format!("        '{o}'")
                    }
                })
                .collect();
            format!(
                "#compdef mcp\n# zsh completion for mcp (mcp completions zsh)\n_mcp() {{\n    local -a commands\n    commands=(\n{}\n    )\n    _arguments -s \\\n{} \\\n        '1:command:{{_describe command commands}}' \\\n        '*::argument:_files'\n}}\n_mcp \"$@\"\n",
                described.join("\n"),
                opts.join(" \\\n")
            )
        }
        Shell::Fish => {
            let mut out = String::from("# fish completion for mcp (mcp completions fish)\n");
            for (w, _, d) in entries() {
                let first = d.split(['(', ';', ':']).next().unwrap_or("").trim();
                out.push_str(&format!(
                    "complete -c mcp -n __fish_use_subcommand -f -a {w} -d '{}'\n",
                    first.replace('\'', "")
                ));
            }
            for o in options() {
                let flag = match o.strip_prefix("--") {
                    Some(long) => format!("-l {long}"),
                    None => format!("-s {}", o.trim_start_matches('-')),
                };
                let takes = if PATH_OPTIONS.contains(&o) {
                    " -r -F"
                } else {
                    ""
                };
                out.push_str(&format!("complete -c mcp {flag}{takes}\n"));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_its_help_and_a_near_miss_is_named() {
        let names = commands();
        for expected in [
            "tools",
            "search",
            "skills",
            "skill",
            "app",
            "call",
            "probe",
            "help",
            "completions",
            "repl",
            "login",
        ] {
            assert!(names.contains(&expected), "{names:?}");
        }
        assert!(for_command("call").starts_with("usage: mcp [OPTIONS] call [--full] TOOL"));
        assert!(for_command("search").starts_with("usage: mcp [OPTIONS] search [--limit N] QUERY"));
        assert!(known("tols").unwrap_err().contains("did you mean tools?"));
        assert!(options().contains(&"--config") && options().contains(&"-V"));
    }
}
