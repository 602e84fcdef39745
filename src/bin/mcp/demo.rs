//! The no-command demo: the binary starts its own demo servers (itself, re-run with
//! `--demo-server`) and walks through the lifecycle: discovery, the startup gate, a slow server
//! waited for (nothing cached yet), calls, a reload in which the slow server's tools come from
//! the cache as deferred tools, a deferred call that waits for its server, and shutdown.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use mcp_runtime::config::{load_all_mcp_configs, DiscoveryOptions, LoadedConfigs, ProjectTrust};
use mcp_runtime::host::{loaded_tools, AgentTool};
use mcp_runtime::manager::{ConnectReport, McpManager};
use mcp_runtime::manager::{FileToolCache, ToolCache};
use mcp_runtime::CallOptions;
use serde_json::{json, Value};

use crate::args::Args;

/// Runs the demo; the exit status is 0 when every step worked.
pub fn run(args: &Args) -> Result<u8, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = std::env::temp_dir().join(format!("mcp-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = walk_through(args, &exe, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn walk_through(args: &Args, exe: &Path, dir: &Path) -> Result<u8, String> {
    let project = dir.join("project");
    let home = dir.join("home");
    std::fs::create_dir_all(&project).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let exe = exe.display().to_string();
    let config = json!({"mcpServers": {
        "fast": {"command": exe, "args": ["--demo-server", "fast"]},
        "slow": {"command": exe, "args": ["--demo-server", "slow"]}
    }});
    let path = project.join(".mcp.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&config).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    let mut checks = Checks::default();

    outln!("== 1. Discovery");
    let discovery = DiscoveryOptions {
        home: Some(home),
        // The demo wrote this project itself, so its servers need no approval.
        project_trust: ProjectTrust::TrustAll,
        ..DiscoveryOptions::default()
    };
    let found = load_all_mcp_configs(&project, &discovery);
    for (name, c) in &found.configs {
        let src = &found.sources[name];
        outln!(
            "   {name:5} {} {} (from {} via {})",
            c.command.as_deref().unwrap_or(""),
            c.args.join(" "),
            src.path.display(),
            src.provider_name
        );
    }

    // The demo keeps its cache to itself, so every run starts cold.
    let mut options = crate::manager_options(args, &project);
    if !args.no_cache && args.cache_dir.is_none() {
        options.cache = Some(Arc::new(FileToolCache::new(dir.join("cache"))) as Arc<dyn ToolCache>);
    }
    let cached = options.cache.is_some();
    let manager = McpManager::new(options);
    crate::signals::close_on_signal(&manager);

    outln!(
        "\n== 2. Start: every server in parallel, then the {} ms gate",
        manager.options().startup_timeout.as_millis()
    );
    let (report, took) = connect(&manager, &found);
    show(&report, took);
    outln!(
        "   nothing was cached yet, so the slow server was waited for: a server still \
         connecting after the gate, with no tools cached, is waited for"
    );
    checks.expect(
        "start: fast and slow connected",
        sorted(&report.connected) == ["fast", "slow"],
        format!(
            "connected {:?}, failed {:?}",
            report.connected, report.errors
        ),
    );

    outln!("\n== 3. Tools, named mcp_<server>_<tool>");
    let tools = loaded_tools(&manager);
    for t in &tools {
        outln!("   {:22} {:40} {}", t.name(), t.description(), t.origin());
    }

    outln!("\n== 4. Calls");
    checks.call(&tools, "mcp_fast_greet", json!({"name": "world"}));
    checks.call(&tools, "mcp_slow_countdown", json!({"n": 3}));

    outln!("\n== 5. Reload: disconnect everything, start again");
    manager.disconnect_all();
    let (report, took) = connect(&manager, &found);
    show(&report, took);
    let tools = loaded_tools(&manager);
    if cached {
        // The slow server takes longer than the gate on any machine; the fast one makes it
        // in time on most, and is deferred too on a slow one (both are right).
        let mut both = sorted(&report.connected);
        both.extend(sorted(&report.deferred));
        checks.expect(
            "reload: slow deferred, its tools from the cache; fast connected or deferred",
            report.deferred.iter().any(|s| s == "slow") && sorted(&both) == ["fast", "slow"],
            format!(
                "connected {:?}, deferred {:?}, failed {:?}",
                report.connected, report.deferred, report.errors
            ),
        );
        outln!("   the slow server's tools came from the cache: the host has them at once");
        outln!("   calling a deferred tool waits for its server, then calls it:");
    }
    checks.call(&tools, "mcp_slow_weather", json!({"city": "Lisbon"}));

    outln!("\n== 6. Shutdown: close every connection, leave no process behind");
    let pids: Vec<u32> = manager
        .server_names()
        .iter()
        .filter_map(|n| manager.client(n)?.pid())
        .collect();
    manager.close();
    let alive: Vec<u32> = pids.into_iter().filter(|p| !gone(*p)).collect();
    if alive.is_empty() {
        outln!("   no server process left");
    }
    checks.expect(
        "shutdown: no server process left",
        alive.is_empty(),
        format!("still running: {alive:?}"),
    );
    Ok(checks.finish())
}

/// What the demo expected at each step, and what it saw where that differed.
#[derive(Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn expect(&mut self, what: &str, held: bool, saw: String) {
        if !held {
            self.failures.push(format!("expected {what}; saw {saw}"));
        }
    }

    fn call(&mut self, tools: &[Arc<dyn AgentTool>], name: &str, args: Value) {
        if let Err(saw) = call(tools, name, args) {
            self.failures
                .push(format!("expected {name} to answer; {saw}"));
        }
    }

    /// Prints the verdict; the exit status.
    fn finish(self) -> u8 {
        if self.failures.is_empty() {
            outln!("\ndemo finished: every step worked");
            return 0;
        }
        outln!("\ndemo finished with failures:");
        for failure in &self.failures {
            outln!("   {failure}");
        }
        1
    }
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names
}

fn connect(manager: &McpManager, found: &LoadedConfigs) -> (ConnectReport, u128) {
    let started = Instant::now();
    let report = manager.connect_found(found);
    (report, started.elapsed().as_millis())
}

fn show(report: &ConnectReport, took: u128) {
    outln!("   connect_servers returned after {took} ms");
    outln!(
        "   connected: {:?}  deferred (from the cache): {:?}  failed: {:?}",
        report.connected,
        report.deferred,
        report.errors.keys().collect::<Vec<_>>()
    );
}

/// Calls a tool and shows the result; `Err` says what went wrong.
fn call(tools: &[Arc<dyn AgentTool>], name: &str, args: Value) -> Result<(), String> {
    let Some(t) = tools.iter().find(|t| t.name() == name) else {
        outln!("   {name}: not available");
        return Err("it is not among the tools".into());
    };
    let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&progress);
    let options = CallOptions {
        on_progress: Some(Box::new(move |p| {
            if let Ok(mut v) = sink.lock() {
                v.push(p.message.clone().unwrap_or_else(|| p.progress.to_string()));
            }
        })),
        ..CallOptions::default()
    };
    let started = Instant::now();
    match t.execute(args.clone(), options) {
        Ok(out) => {
            outln!(
                "   {name} {args} → {} ({} ms)",
                out.model_text(),
                started.elapsed().as_millis()
            );
            let progress = progress.lock().map(|p| p.clone()).unwrap_or_default();
            if !progress.is_empty() {
                outln!("      progress: {}", progress.join(", "));
            }
            if out.is_error {
                return Err(format!("it answered an error: {}", out.model_text()));
            }
            Ok(())
        }
        Err(e) => {
            outln!("   {name} {args} → {e}");
            Err(format!("the call failed: {e}"))
        }
    }
}

/// Whether a process is gone (or a zombie), checking for up to three seconds (Linux and
/// Windows; elsewhere it is assumed gone).
fn gone(pid: u32) -> bool {
    gone_within(pid, std::time::Duration::from_secs(3))
}

#[cfg(target_os = "linux")]
fn gone_within(pid: u32, wait: std::time::Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            })
            .unwrap_or(false);
        if !alive {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Windows: the process's own handle, waited on (a pid is no path into `/proc`, which a
/// Windows program run under Wine would otherwise read from the Linux host).
#[cfg(windows)]
fn gone_within(pid: u32, wait: std::time::Duration) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
    };
    // SAFETY: a plain query of a process by id; the handle, when one comes back, is closed below.
    let handle = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
    if handle.is_null() {
        // No such process any more (nothing holds it open).
        return true;
    }
    let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
    // SAFETY: `handle` is the valid process handle just opened, closed once here.
    unsafe {
        let ended = WaitForSingleObject(handle, ms) == WAIT_OBJECT_0;
        CloseHandle(handle);
        ended
    }
}

#[cfg(not(any(target_os = "linux", windows)))]
fn gone_within(_pid: u32, _wait: std::time::Duration) -> bool {
    true
}
