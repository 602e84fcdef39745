//! Getting a server from the MCP Registry: `registry search`, `registry show` and `add`. `add`
//! asks each question the entry asks (on a terminal; `--set KEY=VALUE` for scripts), shows what
//! will run, as `trust` shows a project server, and writes nothing until that is approved (on a
//! terminal, a `y`; in a script, `--yes`).

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use mcp_runtime::config::ConfigWriter;
use mcp_runtime::install::{Bundle, Proposal, Question, Registry, ServerEntry, Status};
use mcp_runtime::Error;
use serde_json::{json, Value};

use crate::args::{AddRequest, Args};

/// The registry a command speaks to: `--registry URL`, else the official one.
fn registry(url: Option<&str>) -> Result<Registry, String> {
    match url {
        Some(url) => Registry::new(url).map_err(|e| e.to_string()),
        None => Ok(Registry::official()),
    }
}

/// A failure of the registry or of the entry: one line, and the status its kind says.
fn failed(e: &Error) -> u8 {
    eprintln!("mcp: {}", printable(&e.to_string()));
    crate::failure::classify(e).1
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Active => "active",
        Status::Deprecated => "deprecated",
        _ => "deleted",
    }
}

/// `registry search QUERY [--cursor C]`.
pub fn search(
    args: &Args,
    query: &str,
    cursor: Option<&str>,
    url: Option<&str>,
) -> Result<u8, String> {
    let registry = registry(url)?;
    let (found, next) = match registry.search(query, cursor) {
        Ok(page) => page,
        Err(e) => return Ok(failed(&e)),
    };
    if args.json {
        let rows: Vec<Value> = found.iter().map(entry_json).collect();
        outln!("{}", json!({"servers": rows, "nextCursor": next}));
        return Ok(0);
    }
    if found.is_empty() {
        outln!("no server in {} matches {query:?}", registry.base_url());
    }
    let name_w = crate::output::column_width(found.iter().map(|e| e.name()));
    let version_w = crate::output::column_width(found.iter().map(|e| e.version()));
    for entry in &found {
        let mark = match entry.status() {
            Status::Active => "",
            _ => " [deprecated]",
        };
        outln!(
            "{:name_w$}  {:version_w$}  {}{mark}",
            entry.name(),
            printable(entry.version()),
            printable(entry.description())
        );
    }
    if let Some(next) = next {
        eprintln!("more: mcp registry search {query:?} --cursor {next}");
    }
    Ok(0)
}

/// `NAME@VERSION` or `NAME`.
fn name_and_version(what: &str) -> (&str, Option<&str>) {
    match what.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => (name, Some(version)),
        _ => (what, None),
    }
}

/// `registry show NAME[@VERSION]`: the entry, its versions, its ways and what each asks.
pub fn show(args: &Args, what: &str, url: Option<&str>) -> Result<u8, String> {
    let registry = registry(url)?;
    let (name, version) = name_and_version(what);
    let entry = match registry.get(name, version) {
        Ok(entry) => entry,
        Err(e) => return Ok(failed(&e)),
    };
    let versions: Vec<String> = match registry.versions(name) {
        Ok(all) => all.iter().map(|e| e.version().to_owned()).collect(),
        Err(e) => return Ok(failed(&e)),
    };
    if args.json {
        let mut row = entry_json(&entry);
        row["versions"] = json!(versions);
        outln!("{row}");
        return Ok(0);
    }
    outln!(
        "{} {} ({})",
        entry.name(),
        printable(entry.version()),
        status_word(entry.status())
    );
    if let Some(title) = entry.title() {
        outln!("{}", printable(title));
    }
    outln!("{}", printable(entry.description()));
    outln!("versions: {}", printable(&versions.join(", ")));
    outln!("ways to run it (add --way N):");
    for (number, way) in entry.ways().iter().enumerate() {
        outln!("  {number}. {}", printable(way));
        match (entry.questions(number), entry.bundle(number)) {
            (_, Some((_, sha256))) => outln!(
                "       a bundle: add downloads it, checks its SHA-256 ({sha256}) and asks \
                 what its manifest asks"
            ),
            (Ok(questions), None) => {
                for q in &questions {
                    outln!("       {}", question_line(q));
                }
            }
            (Err(e), None) => outln!("       cannot be run here: {e}"),
        }
    }
    Ok(0)
}

/// One question as a line: `env:API_KEY (required, secret, default 1): what it is`.
fn question_line(q: &Question) -> String {
    let mut marks = Vec::new();
    if q.required {
        marks.push("required".to_owned());
    }
    if q.secret {
        marks.push("secret".to_owned());
    }
    if q.repeated {
        marks.push("one value per line".to_owned());
    }
    if let Some(d) = &q.default {
        marks.push(format!("default {d}"));
    }
    if !q.choices.is_empty() {
        marks.push(format!("one of {}", q.choices.join(", ")));
    }
    if q.format != "string" {
        marks.push(q.format.clone());
    }
    let mut line = q.key.clone();
    if !marks.is_empty() {
        line.push_str(&format!(" ({})", marks.join(", ")));
    }
    if let Some(d) = &q.description {
        line.push_str(": ");
        line.push_str(d);
    }
    printable(&line)
}

fn entry_json(entry: &ServerEntry) -> Value {
    let ways: Vec<Value> = (entry.ways().iter().enumerate())
        .map(
            |(number, way)| match (entry.questions(number), entry.bundle(number)) {
                (_, Some((url, sha256))) => {
                    json!({"way": way, "bundle": {"url": url, "sha256": sha256}})
                }
                (Ok(questions), None) => {
                    json!({"way": way, "questions": questions.iter().map(|q| json!({
                "key": q.key, "name": q.name, "description": q.description,
                "required": q.required, "secret": q.secret, "default": q.default,
                "choices": q.choices, "format": q.format, "repeated": q.repeated,
            })).collect::<Vec<_>>()})
                }
                (Err(e), None) => json!({"way": way, "unrunnable": e.to_string()}),
            },
        )
        .collect();
    json!({"name": entry.name(), "version": entry.version(), "title": entry.title(),
           "description": entry.description(), "status": status_word(entry.status()),
           "ways": ways})
}

/// `text` with its control characters escaped: what a registry or a bundle says cannot redraw
/// the terminal or add a line.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_debug().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// On a terminal (stdin and stderr), where questions are asked.
fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// What `add` adds: a registry entry's way of running, or a bundle.
enum Source {
    Entry(ServerEntry, usize),
    Bundle(Box<Bundle>),
}

/// Whether `what` names a bundle file rather than a registry entry.
fn is_bundle_file(what: &str) -> bool {
    what.ends_with(".mcpb") || Path::new(what).is_file()
}

/// Where `add` gets its server: a bundle's URL (with `--sha256`), a bundle file, or a registry
/// entry (whose chosen way may be a bundle, downloaded and checked against its digest).
fn source(request: &AddRequest) -> Result<Result<Source, Error>, String> {
    let what = request.what.as_str();
    let sha256 = request.sha256.as_deref();
    if what.starts_with("http://") || what.starts_with("https://") {
        let sha256 =
            sha256.ok_or("a bundle's URL goes with --sha256 HEX, the digest it must have")?;
        return Ok(Bundle::download(what, sha256).map(|b| Source::Bundle(Box::new(b))));
    }
    if is_bundle_file(what) {
        return Ok(Bundle::open(Path::new(what), sha256).map(|b| Source::Bundle(Box::new(b))));
    }
    if sha256.is_some() {
        return Err("--sha256 goes with a bundle (a .mcpb file or its URL)".into());
    }
    let registry = registry(request.registry.as_deref())?;
    let (name, version) = name_and_version(what);
    let entry = match registry.get(name, version) {
        Ok(entry) => entry,
        Err(e) => return Ok(Err(e)),
    };
    let way = match request.way {
        Some(way) => way,
        // The first way that runs here.
        None => (0..entry.ways().len())
            .find(|&w| entry.questions(w).is_ok() || entry.bundle(w).is_some())
            .ok_or_else(|| {
                format!(
                    "{} {} has no way to run it here",
                    entry.name(),
                    entry.version()
                )
            })?,
    };
    let Some((url, sha256)) = entry.bundle(way) else {
        return Ok(Ok(Source::Entry(entry, way)));
    };
    match entry.status() {
        Status::Active => {}
        Status::Deprecated => eprintln!(
            "warning: {} {} is deprecated in the registry",
            entry.name(),
            printable(entry.version())
        ),
        _ => {
            return Ok(Err(Error::Config {
                message: format!(
                    "{} {} was deleted from the registry; it is not added",
                    entry.name(),
                    printable(entry.version())
                ),
            }))
        }
    }
    Ok(Bundle::download(url, sha256).map(|b| Source::Bundle(Box::new(b))))
}

/// `add NAME[@VERSION]`, `add ./bundle.mcpb`, `add URL --sha256 HEX`.
pub fn add(args: &Args, project: &Path, request: &AddRequest) -> Result<u8, String> {
    let source = match source(request)? {
        Ok(source) => source,
        Err(e) => return Ok(failed(&e)),
    };
    let questions = match &source {
        Source::Entry(entry, way) => match entry.questions(*way) {
            Ok(questions) => questions,
            Err(e) => return Ok(failed(&e)),
        },
        Source::Bundle(bundle) => bundle.questions(),
    };
    let mut answers: BTreeMap<String, String> = request.sets.iter().cloned().collect();
    if let Some(key) = answers
        .keys()
        .find(|k| !questions.iter().any(|q| &q.key == *k))
    {
        let keys: Vec<&str> = questions.iter().map(|q| q.key.as_str()).collect();
        return Err(format!(
            "--set {key}: this way asks no such question (it asks: {})",
            if keys.is_empty() {
                "nothing".to_owned()
            } else {
                keys.join(", ")
            }
        ));
    }
    if interactive() && !request.yes {
        for q in &questions {
            if answers.contains_key(&q.key) {
                continue;
            }
            if let Some(answer) = ask(q)? {
                answers.insert(q.key.clone(), answer);
            }
        }
    }
    let proposed = match &source {
        Source::Entry(entry, way) => entry.propose(*way, &answers),
        Source::Bundle(bundle) => bundle.propose(&answers, project, &crate::load_options(args)),
    };
    let mut proposal = match proposed {
        Ok(p) => p,
        Err(e) => {
            let code = failed(&e);
            let unanswered = matches!(&e, Error::Config { message }
                if message.contains(" is required") || message.contains(" must be"));
            if unanswered && (!interactive() || request.yes) {
                eprintln!("mcp: an answer is given with --set KEY=VALUE (the keys: mcp registry show NAME)");
            }
            return Ok(code);
        }
    };
    if let Some(local) = &request.name {
        proposal = proposal
            .with_name(local.clone())
            .map_err(|e| e.to_string())?;
    }
    if let Some(flags) = &request.sandbox {
        proposal.sandbox_offered()?;
        proposal = (proposal.sandboxed(Some(flags.0.clone()))).map_err(|e| e.to_string())?;
    }
    consent_and_write(args, project, request, proposal)
}

/// Shows the proposal, asks (on a terminal) or takes `--yes`, and writes it.
fn consent_and_write(
    args: &Args,
    project: &Path,
    request: &AddRequest,
    proposal: Proposal,
) -> Result<u8, String> {
    let options = crate::load_options(args);
    let scope = request.scope;
    let path = ConfigWriter::new(project, &options)
        .path(scope)
        .to_path_buf();
    let ask = interactive() && !request.yes;
    let mut sandbox_chosen = false;
    let written = proposal.add(project, &options, scope, |shown| {
        show_proposal(shown, &path, args.json);
        if request.yes {
            return true;
        }
        if !ask {
            eprintln!("not on a terminal: nothing was added; add --yes to add what is shown");
            return false;
        }
        let offer = shown.sandbox_offered().is_ok() && shown.config().sandbox_enabled != Some(true);
        let question = if offer {
            format!("Add {}? [y/N, s: yes, in the sandbox] ", shown.name())
        } else {
            format!("Add {}? [y/N] ", shown.name())
        };
        match answer(&question).as_deref() {
            Some("y" | "yes") => true,
            Some("s") if offer => {
                sandbox_chosen = true;
                false
            }
            _ => false,
        }
    });
    let written = match written {
        Ok(w) => w,
        Err(e) => return Ok(failed(&e)),
    };
    let written = match (written, sandbox_chosen) {
        (Some(path), _) => Some(path),
        (None, true) => {
            // Asked again with the sandbox on: what is written is what was shown last.
            let sandboxed = proposal
                .clone()
                .sandboxed(None)
                .map_err(|e| e.to_string())?;
            match sandboxed.add(project, &options, scope, |shown| {
                show_proposal(shown, &path, args.json);
                matches!(
                    answer(&format!("Add {} in the sandbox? [y/N] ", shown.name())).as_deref(),
                    Some("y" | "yes")
                )
            }) {
                Ok(w) => w,
                Err(e) => return Ok(failed(&e)),
            }
        }
        (None, false) => None,
    };
    match written {
        Some(path) => {
            if args.json {
                outln!(
                    "{}",
                    json!({"added": proposal.name(), "path": path.display().to_string(),
                           "lines": proposal.lines()})
                );
            } else {
                outln!("added to {}", path.display());
            }
            Ok(0)
        }
        None => {
            if ask {
                eprintln!("nothing was added");
            }
            Ok(1)
        }
    }
}

/// What is shown before consent: the server, the file, what runs, the warnings (on stderr
/// with --json, whose stdout is the result's object alone).
fn show_proposal(shown: &Proposal, path: &Path, json: bool) {
    let mut text = format!("{} (to be written to {})\n", shown.name(), path.display());
    for line in shown.lines() {
        text.push_str(&format!("    {line}\n"));
    }
    if json {
        eprint!("{text}");
    } else {
        out!("{text}");
    }
    for warning in shown.warnings() {
        eprintln!("warning: {warning}");
    }
    crate::output::flush();
}

/// Asks one question on the terminal; `None` for an empty answer (the default, or nothing).
fn ask(q: &Question) -> Result<Option<String>, String> {
    let mut prompt = question_line(q);
    use mcp_runtime::install::Asked;
    if q.secret && matches!(q.asked, Asked::Env | Asked::Header) {
        prompt.push_str(&format!(
            "\n  a secret: ${{{}}} (read from your environment) or !command keeps it out of the file",
            q.name
        ));
    } else if q.secret {
        prompt.push_str(
            "\n  a secret: ${NAME} (read from your environment when the config is read) keeps \
             it out of the file",
        );
    }
    let prompt = format!("{prompt}\n> ");
    let line = if q.secret {
        read_hidden(&prompt)
    } else {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        read_line()
    };
    let line = line.ok_or("no answer: stdin ended")?;
    Ok(Some(line).filter(|l| !l.is_empty()))
}

/// An answer to a yes/no question, lower case; `None` when stdin ended.
fn answer(question: &str) -> Option<String> {
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    read_line().map(|a| a.trim().to_ascii_lowercase())
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

/// A line read with the terminal's echo off (a secret is never shown), asked with `prompt`
/// once the echo is off (what is typed after the prompt shows is never echoed). A signal that
/// ends the command while it waits puts the echo back first.
fn read_hidden(prompt: &str) -> Option<String> {
    #[cfg(unix)]
    {
        // SAFETY: tcgetattr/tcsetattr on stdin with a zeroed termios they fill in; the echo
        // flag is put back whatever the read gives.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        let got = unsafe { libc::tcgetattr(0, &mut saved) } == 0;
        if got {
            let mut quiet = saved;
            quiet.c_lflag &= !libc::ECHO;
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &quiet) };
            // SAFETY: as above, with the attributes read before.
            crate::signals::on_signal(move || unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &saved);
            });
        }
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let line = read_line();
        if got {
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &saved) };
            eprintln!();
        }
        line
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Console::{
            GetConsoleMode, GetStdHandle, SetConsoleMode, ENABLE_ECHO_INPUT, STD_INPUT_HANDLE,
        };
        // SAFETY: the console's input handle and its mode, put back after the read.
        let input = unsafe { GetStdHandle(STD_INPUT_HANDLE) };
        let mut saved = 0;
        let got = unsafe { GetConsoleMode(input, &mut saved) } != 0;
        if got {
            unsafe { SetConsoleMode(input, saved & !ENABLE_ECHO_INPUT) };
        }
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        let line = read_line();
        if got {
            unsafe { SetConsoleMode(input, saved) };
            eprintln!();
        }
        line
    }
    #[cfg(not(any(unix, windows)))]
    {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        read_line()
    }
}
