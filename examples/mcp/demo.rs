//! The no-command demo: the binary starts its own demo servers (itself, re-run with
//! `--demo-server`) and walks through what the runtime does with them.

use std::path::PathBuf;
use std::time::Instant;

use mcp_runtime::config::{read_mcp_json, Level, ServerConfig, SourceMeta};
use mcp_runtime::tool::render_text;
use mcp_runtime::{CallOptions, ConnectOptions};
use serde_json::{json, Value};

use crate::fleet::Fleet;

/// Runs the demo; the exit status is 0 when every step worked.
pub fn run(options: &ConnectOptions) -> Result<u8, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = std::env::temp_dir().join(format!("mcp-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = walk_through(&exe, &dir, options);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn walk_through(
    exe: &std::path::Path,
    dir: &std::path::Path,
    options: &ConnectOptions,
) -> Result<u8, String> {
    let exe = exe.display().to_string();
    let config = json!({"mcpServers": {
        "fast": {"command": exe, "args": ["--demo-server", "fast"]},
        "slow": {"command": exe, "args": ["--demo-server", "slow"]}
    }});
    let path: PathBuf = dir.join(".mcp.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&config).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;

    println!("== 1. Discovery\n   {} declares:", path.display());
    let file = read_mcp_json(&path).map_err(|e| e.to_string())?;
    for (name, c) in &file.servers {
        println!(
            "   {name:5} {:5} {} {}",
            c.transport_type().map(|t| t.as_str()).unwrap_or("?"),
            c.command.as_deref().unwrap_or(""),
            c.args.join(" ")
        );
    }

    println!("\n== 2. Connect every server in parallel (spawn, initialize, tools/list)");
    let started = Instant::now();
    let source = SourceMeta {
        provider: "mcp-json".into(),
        provider_name: "MCP Config".into(),
        path: path.clone(),
        level: Level::Project,
    };
    let configs: Vec<(String, ServerConfig, SourceMeta)> = file
        .servers
        .into_iter()
        .map(|(n, c)| (n, c, source.clone()))
        .collect();
    let fleet = Fleet::connect(configs, dir, options);
    let mut ok = true;
    for s in &fleet.servers {
        match &s.outcome {
            Ok(c) => println!(
                "   {:5} connected in {:4} ms, pid {}, {} tools",
                s.name,
                s.took.as_millis(),
                c.client.pid().unwrap_or(0),
                c.tools.len()
            ),
            Err(e) => {
                ok = false;
                println!("   {:5} failed: {e}", s.name);
            }
        }
    }
    println!(
        "   all done in {} ms: the slow server did not hold up the fast one's start",
        started.elapsed().as_millis()
    );

    println!("\n== 3. Tools, named mcp_<server>_<tool>");
    for t in &fleet.tools {
        println!(
            "   {:22} {}",
            t.name,
            t.tool.description.as_deref().unwrap_or("")
        );
    }

    println!("\n== 4. Calls");
    let calls: [(&str, Value); 3] = [
        ("mcp_fast_greet", json!({"name": "world"})),
        ("mcp_slow_weather", json!({"city": "Lisbon"})),
        ("mcp_slow_countdown", json!({"n": 3})),
    ];
    for (name, args) in calls {
        let Some((exposed, connected)) = fleet.find(name) else {
            ok = false;
            println!("   {name}: not available");
            continue;
        };
        let mut progress = Vec::new();
        let options = CallOptions::default().with_progress(|p| {
            progress.push(p.message.clone().unwrap_or_else(|| p.progress.to_string()))
        });
        match connected
            .client
            .call_tool(&exposed.tool.name, args.clone(), options)
        {
            Ok(r) => {
                ok &= !r.is_error();
                println!("   {name} {args} → {}", render_text(&r));
                if !progress.is_empty() {
                    println!("      progress: {}", progress.join(", "));
                }
            }
            Err(e) => {
                ok = false;
                println!("   {name} {args} → error: {e}");
            }
        }
    }

    println!("\n== 5. Shutdown: close every connection, leave no process behind");
    let pids: Vec<u32> = fleet
        .servers
        .iter()
        .filter_map(|s| s.outcome.as_ref().ok()?.client.pid())
        .collect();
    fleet.close();
    for s in &fleet.servers {
        if let Ok(c) = &s.outcome {
            println!(
                "   {:5} {}",
                s.name,
                c.client
                    .closed_reason()
                    .map(|e| e.to_string())
                    .unwrap_or_default()
            );
        }
    }
    let alive: Vec<u32> = pids.into_iter().filter(|p| is_alive(*p)).collect();
    if alive.is_empty() {
        println!("   no server process left");
    } else {
        ok = false;
        println!("   still running: {alive:?}");
    }
    println!(
        "\n{}",
        if ok {
            "demo finished: every step worked"
        } else {
            "demo finished with failures"
        }
    );
    Ok(u8::from(!ok))
}

/// Whether a process exists and is not a zombie (Linux); elsewhere assume it is gone.
fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, r)| !r.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}
