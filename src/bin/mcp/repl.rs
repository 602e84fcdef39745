//! `mcp repl`: a host session driven line by line from stdin (a terminal or a script's pipe).
//!
//! Lines: `/mcp <sub> ...` (the /mcp commands), `tools`, `call TOOL [JSON | KEY=VALUE...]`,
//! `status` (each server's outcome first, as `mcp status`; `/mcp status` is the same), `quit`
//! (or `exit`, or the end of input). Each answer is printed, followed by a blank line. On quit
//! every server is disconnected: nothing is left running.
//!
//! With `--config FILE` the session reads that file only, and the commands that edit config
//! files (`/mcp add`, `remove`, `enable`, `disable`) are refused: they would otherwise write the
//! host's own files (the user's `~/.mcp-runtime/mcp.json`), which `--config` promised to leave
//! alone. Edit FILE itself and `/mcp reload`.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::config::{file_source, ProjectTrust};
use mcp_runtime::host::{create_agent_session, AgentSession, SessionOptions};
use mcp_runtime::CallOptions;

use crate::args::Args;

/// Runs the repl until `quit` or the end of input.
pub fn run(args: &Args, project: &Path) -> Result<u8, String> {
    let mut config = crate::load_options(args);
    if let Some(file) = &args.config {
        // The given file, nothing else; the user named it, so it needs no approval.
        config.sources = Some(vec![file_source(file)]);
        config.project_trust = ProjectTrust::TrustAll;
    }
    let session = create_agent_session(SessionOptions {
        cwd: project.to_path_buf(),
        config,
        manager: crate::manager_options(args, project),
        // The cache is chosen by manager_options (--cache-dir, --no-cache).
        default_cache: false,
        on_manager: Some(Arc::new(crate::signals::close_on_signal)),
        ..SessionOptions::default()
    });
    for e in session.startup_errors() {
        eprintln!("{}", crate::servers::error_line(e));
    }
    let stdin = std::io::stdin();
    let mut code = 0;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (answer, failed) = match line {
            "quit" | "exit" => break,
            "tools" => (tools(&session), false),
            // As `mcp status` does: each server's outcome first (bounded by its connect
            // timeout), so the two never disagree.
            "status" | "/mcp status" => {
                if let Some(manager) = session.manager() {
                    crate::servers::wait_for_outcomes(manager);
                }
                (session.run_command("status"), false)
            }
            l if args.config.is_some() && mcp_runtime::host::command_edits_config(l) => {
                (
                    format!(
                    "Refused: this session uses --config {}, and {l:?} would edit config files. \
                     Edit that file and run /mcp reload instead.",
                    args.config.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
                ),
                    true,
                )
            }
            l if l.starts_with("/mcp") => (session.run_command(l), false),
            l if l.starts_with("call ") || l == "call" => call(&session, l, args),
            other => (
                format!(
                    "Unknown command: {other}. Try /mcp help, tools, call TOOL [JSON | KEY=VALUE...], status, quit."
                ),
                true,
            ),
        };
        if failed {
            code = 1;
        }
        outln!("{answer}\n");
        crate::output::flush();
    }
    session.close();
    Ok(code)
}

fn tools(session: &AgentSession) -> String {
    let active = session.active_tools();
    if active.is_empty() {
        return "No tools.".to_owned();
    }
    active
        .iter()
        .map(|t| {
            format!(
                "{}  {}",
                t.name(),
                t.description().lines().next().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn call(session: &AgentSession, line: &str, args: &Args) -> (String, bool) {
    let rest = line.strip_prefix("call").unwrap_or("").trim();
    let (name, rest) = match rest.split_once(char::is_whitespace) {
        Some((n, r)) => (n, r.trim()),
        None => (rest, ""),
    };
    if name.is_empty() {
        return ("usage: call TOOL [JSON | KEY=VALUE...]".to_owned(), true);
    }
    let Some(tool) = session.tool(name) else {
        return (format!("No tool named {name}."), true);
    };
    // One JSON object, or KEY=VALUE words typed by the tool's schema (as `mcp call` takes).
    let words = match rest {
        "" => Vec::new(),
        json if json.starts_with('{') => vec![json.to_owned()],
        words => match split_words(words) {
            Ok(words) => words,
            Err(e) => return (e, true),
        },
    };
    let arguments = match crate::arguments::arguments(&words, Some(tool.parameters())) {
        Ok(v) => v,
        Err(e) => return (e, true),
    };
    let options = CallOptions {
        timeout: args.timeout_ms.map(Duration::from_millis),
        ..CallOptions::default()
    };
    match tool.execute(arguments, options) {
        Ok(out) => (out.model_text(), out.is_error),
        Err(e) => (format!("Error: {e}"), true),
    }
}

/// Splits a line into words as a shell would for `KEY=VALUE` arguments: spaces separate,
/// single or double quotes keep spaces in, a backslash escapes the next character.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None | Some('"'), '\\') => {
                let next = chars.next().ok_or("a backslash ends the line")?;
                word.get_or_insert_with(String::new).push(next);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return Err("a quote is not closed".into());
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn words_split_on_spaces_and_quotes_keep_them() {
        assert_eq!(
            split_words(r#"a=1 name="two words" path='x y' esc=a\ b empty="""#).unwrap(),
            ["a=1", "name=two words", "path=x y", "esc=a b", "empty="]
        );
        assert!(split_words("a='open").is_err());
    }
}
