//! An editor-like host: a session per opened workspace, kept up to date by listeners (its
//! tools, prompts and resources), the project's own servers started only once the user
//! approves them, and the `/mcp` commands an editor's command palette would offer (disable,
//! enable, reload, status).
//!
//! The user's answers are scripted: `--approve` approves every project server that waits.
//!
//! ```sh
//! cargo run --example editor -- path/to/workspace            # what it would ask
//! cargo run --example editor -- path/to/workspace --approve  # and the answer: yes
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use mcp_runtime::config::DiscoveryOptions;
use mcp_runtime::{create_agent_session, AgentSession, SessionOptions};

/// Opens `workspace`: discovery from there (its project files and the user's own), the
/// editor's words for approving a server, and listeners that keep the editor's panels current.
/// The receiver hears the number of prompts after each change of the features panel.
fn open(workspace: PathBuf) -> (AgentSession, Receiver<usize>) {
    let session = create_agent_session(SessionOptions {
        cwd: workspace,
        config: DiscoveryOptions {
            approval_hint: Some("approve it in the MCP panel, or with /mcp trust {name}".into()),
            ..DiscoveryOptions::default()
        },
        ..SessionOptions::default()
    });
    // Called on the library's threads, with no lock of the session held: a real editor would
    // post these to its UI thread.
    session.on_refresh(|s| {
        let names = s.mcp_tool_names();
        println!("[tools panel] {} tools: {}", names.len(), names.join(", "));
    });
    let (changed, features) = channel();
    session.on_features_refresh(move |s| {
        let prompts: Vec<String> = s.prompts().iter().map(|p| format!("/{}", p.name)).collect();
        let resources: Vec<String> = s.resources().iter().map(|r| r.item.uri.clone()).collect();
        println!("[prompts panel] {}", prompts.join(" "));
        println!("[resources panel] {}", resources.join(" "));
        let _ = changed.send(prompts.len());
    });
    (session, features)
}

fn main() -> ExitCode {
    env_logger::init();
    let mut workspace = None;
    let mut approve = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--approve" => approve = true,
            _ if workspace.is_none() => workspace = Some(PathBuf::from(arg)),
            _ => {
                eprintln!("usage: editor WORKSPACE [--approve]");
                return ExitCode::from(2);
            }
        }
    }
    let Some(workspace) = workspace else {
        eprintln!("usage: editor WORKSPACE [--approve]");
        return ExitCode::from(2);
    };
    let (session, features) = open(workspace);
    for e in session.startup_errors() {
        println!("[problems] {}: {}", e.path, e.error);
    }

    // A repository's own servers run only once the user says so, for their exact config.
    let waiting = session.needs_approval();
    for server in &waiting {
        println!(
            "[dialog] {} (declared in {}) wants to run. Approve?",
            server.name,
            server.source.path.display()
        );
        if approve {
            // What the dialog's "Approve" button runs: remembered until the config changes,
            // and the server is connected.
            println!(
                "{}",
                session.run_command(&format!("/mcp trust {}", server.name))
            );
        }
    }
    if approve {
        for server in &waiting {
            if let Err(e) = session.wait_for_server(&server.name, Duration::from_secs(30)) {
                println!("[problems] {}: {e}", server.name);
            }
        }
    }

    println!("[tools] {}", session.mcp_tool_names().join(", "));
    if approve && !waiting.is_empty() {
        // A server's resources and prompts are listed a moment after its tools: the panels
        // fill in when they come (here, waited for, within a bound).
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if features.recv_timeout(left).is_ok_and(|prompts| prompts > 0) {
                break;
            }
        }
    }
    for resource in session.resources() {
        println!("[resources] {} {}", resource.server, resource.item.uri);
    }
    for prompt in session.prompts() {
        println!("[prompts] /{}", prompt.name);
    }

    // The command palette: turn a server off and on again, then reload everything (after the
    // user edited a config file, say).
    if let Some(server) = waiting.first().filter(|_| approve) {
        println!(
            "{}",
            session.run_command(&format!("/mcp disable {}", server.name))
        );
        println!("[tools] after disable: {}", session.mcp_tool_names().len());
        println!(
            "{}",
            session.run_command(&format!("/mcp enable {}", server.name))
        );
        let _ = session.wait_for_server(&server.name, Duration::from_secs(30));
        println!("[tools] after enable: {}", session.mcp_tool_names().len());
    }
    match session.reload() {
        Some(Ok(report)) => println!(
            "[reload] connected: {}; still connecting: {}; failed: {}",
            report.connected.join(", "),
            report.deferred.len() + report.pending.len(),
            report.errors.len()
        ),
        Some(Err(e)) => println!("[reload] failed, nothing changed: {}", e.error),
        None => println!("[reload] MCP is off"),
    }
    println!("{}", session.run_command("/mcp status"));
    session.close(); // on closing the workspace: every server stopped
    ExitCode::SUCCESS
}
