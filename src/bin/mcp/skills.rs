//! `mcp skills` (every server's skills, from their lists: no skill file is read) and `mcp
//! skill NAME [FILE...]` (a skill loaded: its SKILL.md read and checked against the list, then
//! each FILE, each checked; a file that fails its check stops everything, exit 65).

use std::path::Path;

use mcp_runtime::protocol::Skill;
use mcp_runtime::Client;
use serde_json::{json, Value};

use crate::args::{Args, Command};
use crate::servers::{start, wait_for_outcomes, Session};

/// Runs `skills` or `skill`; the exit status.
pub fn run(args: &Args, project: &Path) -> Result<u8, String> {
    let session = start(args, project)?;
    wait_for_outcomes(&session.manager);
    let code = match &args.command {
        Command::Skills => list(&session, args.json),
        Command::Skill { name, files } => load(&session, name, files, args.json),
        _ => Err("not a skills command".to_owned()),
    };
    for e in &session.errors {
        eprintln!("{}", crate::servers::error_line(e));
    }
    session.manager.close();
    code
}

/// Every connected server's skills, with its client.
fn skills(session: &Session) -> Vec<(String, Client, Skill)> {
    let mut out = Vec::new();
    for server in session.manager.server_names() {
        let Some(client) = session.manager.client(&server) else {
            continue;
        };
        match client.list_skills() {
            Ok(skills) => out.extend(
                skills
                    .into_iter()
                    .map(|s| (server.clone(), client.clone(), s)),
            ),
            Err(e) => eprintln!("mcp: {server}: skills/list: {e}"),
        }
    }
    out
}

fn list(session: &Session, as_json: bool) -> Result<u8, String> {
    let listed = skills(session);
    if as_json {
        let rows: Vec<Value> = listed
            .iter()
            .map(|(server, _, skill)| {
                // The server's own fields first: `server` and `name` are ours to say.
                let mut row = json!(skill);
                row["server"] = json!(server);
                row["name"] = json!(skill.name());
                row
            })
            .collect();
        outln!("{}", Value::Array(rows));
        return Ok(0);
    }
    for (server, _, skill) in &listed {
        outln!(
            "{server}/{}  {}",
            skill.name().unwrap_or("?"),
            skill.description().unwrap_or("")
        );
    }
    Ok(0)
}

fn load(session: &Session, name: &str, files: &[String], as_json: bool) -> Result<u8, String> {
    let listed = skills(session);
    let matching: Vec<&(String, Client, Skill)> = listed
        .iter()
        .filter(|(server, _, skill)| {
            let own = skill.name().unwrap_or("");
            own == name || format!("{server}/{own}") == name
        })
        .collect();
    let (server, client, skill) = match matching.as_slice() {
        [one] => *one,
        [] => return Err(format!("no skill named {name} (see `mcp skills`)")),
        several => {
            let names: Vec<String> = several
                .iter()
                .map(|(s, _, k)| format!("{s}/{}", k.name().unwrap_or("")))
                .collect();
            return Err(format!(
                "{name} is a skill of several servers: name one of {}",
                names.join(", ")
            ));
        }
    };
    let failed = |e: mcp_runtime::Error| {
        let (_, code) = crate::failure::classify(&e);
        if as_json {
            outln!("{}", crate::failure::json(&e));
        }
        eprintln!("mcp: {server}: {e}");
        Ok(code)
    };
    let text = match client.load_skill(skill) {
        Ok(text) => text,
        Err(e) => return failed(e),
    };
    let mut read = Vec::new();
    for file in files {
        match client.read_skill_file(skill, file) {
            Ok(bytes) => read.push((skill.file_uri(file), bytes)),
            Err(e) => return failed(e),
        }
    }
    if as_json {
        let files: Vec<Value> = read
            .iter()
            .map(|(uri, bytes)| json!({"uri": uri, "text": String::from_utf8_lossy(bytes)}))
            .collect();
        outln!(
            "{}",
            json!({"server": server, "name": skill.name(), "uri": skill.uri, "text": text, "files": files})
        );
        return Ok(0);
    }
    outln!("{}", text.trim_end());
    for (uri, bytes) in &read {
        outln!("\n--- {uri}\n{}", String::from_utf8_lossy(bytes).trim_end());
    }
    Ok(0)
}
