//! `mcp call TOOL [ARGS_JSON | KEY=VALUE...]`: starts only the server that owns the tool (when
//! that can be known without starting them all), types `KEY=VALUE` arguments by the tool's
//! schema, and shows progress on stderr when it is a terminal.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::protocol::Progress;
use mcp_runtime::CallOptions;
use parking_lot::Mutex;

use crate::args::Args;
use crate::servers::{owners_of, start_with, Session};
use mcp_runtime::host::AgentTool;

/// Runs the command; the exit status.
pub fn run(args: &Args, project: &Path, name: &str, words: &[String]) -> Result<u8, String> {
    // A JSON argument is checked before anything starts.
    if let [one] = words {
        if one.trim_start().starts_with('{') {
            crate::arguments::arguments(words, None)?;
        }
    }
    let mut session = start_with(args, project, |configs, cache| {
        owners_of(name, configs, cache)
    })?;
    if find(&session, name).is_err() {
        // The guess was wrong (or the cache is stale): every server, then.
        log::debug!("{name} is not among the started servers' tools; starting them all");
        session.connect_all();
    }
    let code = call(&session, name, words, args);
    session.manager.close();
    code
}

/// The tool `name` names: its exposed name (`mcp_<server>_<tool>`), or the tool's own name on
/// its server when one tool has it; else the nearest names.
pub(crate) fn find<'a>(session: &'a Session, name: &str) -> Result<&'a Arc<dyn AgentTool>, String> {
    if let Some(t) = session.tools.iter().find(|t| t.name() == name) {
        return Ok(t);
    }
    let own: Vec<&Arc<dyn AgentTool>> = session
        .tools
        .iter()
        .filter(|t| t.mcp_identity().is_some_and(|(_, tool)| tool == name))
        .collect();
    match own.as_slice() {
        [one] => return Ok(one),
        [] => {}
        several => {
            let names: Vec<&str> = several.iter().map(|t| t.name()).collect();
            return Err(format!(
                "{name} is a tool of several servers: call it as one of {}",
                names.join(", ")
            ));
        }
    }
    let mut near: Vec<(usize, &str)> = session
        .tools
        .iter()
        .map(|t| t.name())
        .map(|n| (distance(name, n), n))
        .collect();
    near.sort();
    let near: Vec<&str> = near
        .into_iter()
        .take_while(|(d, _)| *d <= name.len().max(4) / 2)
        .take(3)
        .map(|(_, n)| n)
        .collect();
    let hint = if near.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", near.join(", "))
    };
    let mut message = format!("no tool named {name}{hint} (see `mcp tools`)");
    for e in &session.errors {
        message.push_str(&format!("; {}", crate::servers::error_line(e)));
    }
    Err(message)
}

fn call(session: &Session, name: &str, words: &[String], args: &Args) -> Result<u8, String> {
    let loaded = match find(session, name) {
        Ok(loaded) => loaded,
        // A server that failed may be the one that has it: its failure, not a usage error
        // (the status and `--json`'s kind are that failure's, as `tools` gives them).
        Err(_) if !session.errors.is_empty() => {
            let (kind, code) = crate::failure::first_server_failure(&session.manager);
            let failures: Vec<String> = session
                .errors
                .iter()
                .map(crate::servers::error_line)
                .collect();
            let mut e = failures.join("; ");
            if !session.tools.is_empty() {
                e.push_str(&format!(
                    "; no server that started has a tool named {name} (see `mcp tools`)"
                ));
            }
            if args.json {
                outln!(
                    "{}",
                    serde_json::json!({"error": {"kind": kind, "message": e}})
                );
            }
            eprintln!("mcp: {e}");
            return Ok(code);
        }
        Err(e) => return Err(e),
    };
    let arguments = crate::arguments::arguments(words, Some(loaded.parameters()))?;
    let bar = std::io::stderr()
        .is_terminal()
        .then(|| Arc::new(ProgressLine::new(loaded.name())));
    let mut options = CallOptions {
        timeout: args.timeout_ms.map(Duration::from_millis),
        ..CallOptions::default()
    };
    if let Some(bar) = bar.clone() {
        options = options.with_progress(move |p: &Progress| bar.show(p));
    }
    let result = loaded.execute(arguments, options);
    if let Some(bar) = &bar {
        bar.clear();
    }
    if crate::signals::interrupted() {
        // The servers are being closed for a signal: what the call saw of it is no news.
        return Ok(130);
    }
    match result {
        Ok(output) => match &output.failure {
            // The call itself failed: never shown as a tool result.
            Some(e) => {
                let (_, code) = crate::failure::classify(e);
                if args.json {
                    outln!("{}", crate::failure::json(e));
                }
                eprintln!("mcp: {}: {e}", loaded.name());
                Ok(code)
            }
            None => {
                if args.json {
                    outln!(
                        "{}",
                        serde_json::to_string(&output.result).unwrap_or_default()
                    );
                } else {
                    outln!("{}", output.model_text());
                }
                let _ = std::io::stdout().flush();
                Ok(u8::from(output.is_error))
            }
        },
        Err(_) => Ok(130),
    }
}

/// One line on stderr, redrawn for each progress report: a bar when the total is known, a
/// spinner otherwise, and the server's message.
struct ProgressLine {
    tool: String,
    ticks: Mutex<usize>,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const BAR_WIDTH: usize = 24;

impl ProgressLine {
    fn new(tool: &str) -> ProgressLine {
        ProgressLine {
            tool: tool.to_owned(),
            ticks: Mutex::new(0),
        }
    }

    fn show(&self, p: &Progress) {
        let tick = {
            let mut ticks = self.ticks.lock();
            *ticks += 1;
            *ticks
        };
        let gauge = match p.total.filter(|t| *t > 0.0) {
            Some(total) => {
                let done = (p.progress / total).clamp(0.0, 1.0);
                let filled = (done * BAR_WIDTH as f64).round() as usize;
                format!(
                    "[{}{}] {:3.0}%",
                    "#".repeat(filled),
                    "-".repeat(BAR_WIDTH - filled),
                    done * 100.0
                )
            }
            None => format!("{} {}", SPINNER[tick % SPINNER.len()], p.progress),
        };
        // The server's message is its text: control characters are not passed to the terminal.
        let message: String = p
            .message
            .as_deref()
            .unwrap_or("")
            .chars()
            .filter(|c| !c.is_control())
            .take(80)
            .collect();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{} {gauge} {message}", self.tool);
        let _ = err.flush();
    }

    fn clear(&self) {
        if *self.ticks.lock() > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// The edit distance between two short words.
fn distance(a: &str, b: &str) -> usize {
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
