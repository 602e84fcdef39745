//! The project trust gate, through the library: a freshly cloned repository's servers neither
//! run nor resolve a value until approved; an approval is remembered for one config; a changed
//! config asks again; user-level servers need no approval; Claude Code's own answers count.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::http_server::{Behaviour, TestHttp};
use mcp_runtime::config::{
    load_all_mcp_configs, DiscoveryOptions, ProjectTrust, TrustDecision, TrustState,
};
use mcp_runtime::host::{create_agent_session, SessionOptions};
use mcp_runtime::host::{trust_servers, untrust_server};
use mcp_runtime::ManagerOptions;
use serde_json::{json, Value};

/// A cloned repository: a home, a project, and marker files that prove what ran.
struct Clone_ {
    root: PathBuf,
}

impl Clone_ {
    fn new(name: &str) -> Clone_ {
        let root = common::temp_dir(&format!("trust-{name}"));
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Clone_ { root }
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    fn marker(&self, name: &str) -> PathBuf {
        self.root.join(format!("ran-{name}"))
    }
    fn write(&self, rel: &str, v: &Value) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, v.to_string()).unwrap();
        path
    }
    /// A stdio server that leaves a marker when spawned, with an env value computed by a
    /// `!command` that leaves another marker.
    fn spawning_server(&self, name: &str, extra_arg: &str) -> Value {
        json!({
            "command": "sh",
            "args": ["-c", format!("touch '{}'; exec '{}' {extra_arg}",
                                   self.marker(&format!("{name}-spawn")).display(), common::server_path())],
            "env": {"FROM_COMMAND": format!("!touch '{}'; echo v",
                                            self.marker(&format!("{name}-command")).display()),
                    "FROM_ENV": "MCP_TRUST_TEST_SECRET"}
        })
    }
    fn config(&self, policy: ProjectTrust) -> DiscoveryOptions {
        DiscoveryOptions {
            home: Some(self.home()),
            project_trust: policy,
            ..DiscoveryOptions::default()
        }
    }
    fn loader(&self, policy: ProjectTrust) -> SessionOptions {
        let mut manager = ManagerOptions::default();
        manager.connect.timeout = Duration::from_secs(20);
        SessionOptions {
            cwd: self.project(),
            config: self.config(policy),
            manager,
            default_cache: false,
            ..SessionOptions::default()
        }
    }
    fn ran(&self, name: &str) -> (bool, bool) {
        (
            self.marker(&format!("{name}-spawn")).exists(),
            self.marker(&format!("{name}-command")).exists(),
        )
    }
}

impl Drop for Clone_ {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn tool_names(loaded: &mcp_runtime::AgentSession) -> Vec<String> {
    (loaded.active_tools().iter())
        .map(|t| t.name().to_owned())
        .collect()
}

#[test]
fn a_cloned_repository_runs_and_resolves_nothing_until_approved() {
    let repo = Clone_::new("clone");
    let http = TestHttp::start(Behaviour::default());
    let mcp_json = repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {
            "local": repo.spawning_server("local", ""),
            "remote": {"type": "http", "url": http.url(),
                       "headers": {"X-From-Command": format!("!touch '{}'; echo v", repo.marker("remote-command").display()),
                                   "X-From-Env": "MCP_TRUST_TEST_SECRET"}}
        }}),
    );
    std::env::set_var("MCP_TRUST_TEST_SECRET", "s3cret-value");

    // No policy: reported, not started.
    let loaded = create_agent_session(repo.loader(ProjectTrust::Report));
    assert!(
        loaded.active_tools().is_empty(),
        "{:?}",
        tool_names(&loaded)
    );
    assert!(loaded.manager().unwrap().server_names().is_empty());
    let waiting: Vec<String> = (loaded.needs_approval().into_iter())
        .map(|d| d.name)
        .collect();
    assert_eq!(waiting, ["local", "remote"]);
    for name in ["local", "remote"] {
        let e = loaded
            .startup_errors()
            .iter()
            .find(|e| e.error.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no error for {name}: {:?}", loaded.startup_errors()));
        assert_eq!(e.path, mcp_json.display().to_string());
        assert!(e.error.contains("needs approval"), "{}", e.error);
        // The library's words are the host's, not a command of our CLI.
        assert!(
            e.error
                .ends_with("approve it where this application manages MCP servers")
                && !e.error.contains("mcp trust"),
            "{}",
            e.error
        );
        assert!(!e.error.contains("s3cret-value"));
    }
    loaded.close();
    assert_eq!(
        repo.ran("local"),
        (false, false),
        "nothing spawned, no !command ran"
    );
    assert!(
        !repo.marker("remote-command").exists(),
        "no header !command ran"
    );
    assert!(
        http.seen().is_empty(),
        "no request reached the remote server"
    );

    // Approve one: it runs (and resolves), the other still waits.
    let approved = trust_servers(
        &repo.project(),
        &repo.config(ProjectTrust::Report),
        &["local".into()],
    )
    .unwrap();
    assert_eq!(approved.len(), 1);
    let loaded = create_agent_session(repo.loader(ProjectTrust::Report));
    assert_eq!(loaded.startup_report().unwrap().connected, ["local"]);
    assert_eq!(repo.ran("local"), (true, true));
    assert!(http.seen().is_empty());
    assert_eq!(loaded.needs_approval().len(), 1);
    loaded.close();

    // A changed config asks again.
    std::fs::remove_file(repo.marker("local-spawn")).unwrap();
    repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {"local": repo.spawning_server("local", "--changed")}}),
    );
    let loaded = create_agent_session(repo.loader(ProjectTrust::Report));
    assert!(loaded.active_tools().is_empty());
    assert_eq!(loaded.needs_approval()[0].name, "local");
    assert!(
        !repo.marker("local-spawn").exists(),
        "the changed command did not run"
    );
    loaded.close();

    // Untrust forgets.
    assert!(untrust_server(&repo.project(), &repo.config(ProjectTrust::Report), "local").unwrap());
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    let names: Vec<&str> = loaded
        .needs_approval()
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["local"], "it waits for approval again");
}

#[test]
fn the_store_is_private_and_keyed_by_the_unresolved_config() {
    let repo = Clone_::new("store");
    repo.write(
        "project/.cursor/mcp.json",
        &json!({"mcpServers": {"c": {"command": "x", "env": {"TOKEN": "MCP_TRUST_TEST_SECRET"}}}}),
    );
    std::env::set_var("MCP_TRUST_TEST_SECRET", "s3cret-value");
    trust_servers(&repo.project(), &repo.config(ProjectTrust::Report), &[]).unwrap();
    let path = repo.home().join(".mcp-runtime/trusted.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("s3cret-value"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    assert_eq!(loaded.discovered[0].trust, TrustState::Approved);
    assert!(loaded.configs.contains_key("c"));
    // The resolved value changing does not re-ask: the hash is over the unresolved config.
    std::env::set_var("MCP_TRUST_TEST_SECRET", "rotated");
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    assert!(loaded.configs.contains_key("c"));
}

#[test]
fn a_changed_config_says_what_changed_names_the_user_server_it_hides_and_ends_with_the_hosts_hint()
{
    let repo = Clone_::new("changed");
    let user = repo.write(
        "home/.claude.json",
        &json!({"mcpServers": {"files": {"command": "my-own-files-server"}}}),
    );
    let project_file = |args: Value, env: Value| {
        repo.write(
            "project/.mcp.json",
            &json!({"mcpServers": {"files": {"command": "node", "args": args, "env": env}}}),
        )
    };
    project_file(json!(["server.js"]), json!({"KEY": "value-one-1"}));
    trust_servers(&repo.project(), &repo.config(ProjectTrust::Report), &[]).unwrap();
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    assert_eq!(loaded.discovered[0].trust, TrustState::Approved);
    assert!(loaded.discovered[0].changes.is_empty());

    project_file(
        json!(["evil.js"]),
        json!({"KEY": "value-two-2", "NEW": "x"}),
    );
    let mut options = repo.config(ProjectTrust::Report);
    options.approval_hint = Some("run `myhost approve {name}`".into());
    let loaded = load_all_mcp_configs(&repo.project(), &options);
    let waiting = loaded.needs_approval();
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        waiting[0].changes,
        [
            "args: server.js → evil.js",
            "env KEY: changed",
            "env NEW: added"
        ]
    );
    let message = loaded.approval_message(waiting[0]);
    assert!(
        message.contains("its config changed since it was approved (args: server.js → evil.js; env KEY: changed; env NEW: added)"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "your own server \"files\" (declared in {}) is not used either",
            user.display()
        )),
        "{message}"
    );
    assert!(
        message.ends_with(": run `myhost approve files`"),
        "{message}"
    );
    assert!(!message.contains("value-"), "{message}");
}

#[test]
fn policies_ask_trust_all_and_user_only() {
    let repo = Clone_::new("policies");
    repo.write(
        "project/.vscode/mcp.json",
        &json!({"servers": {"yes": {"type": "stdio", "command": "a"},
                            "once": {"type": "stdio", "command": "b"},
                            "no": {"type": "stdio", "command": "c"}}}),
    );
    repo.write(
        "home/.cursor/mcp.json",
        &json!({"mcpServers": {"mine": {"command": "d"}}}),
    );
    let asked: Arc<Mutex<Vec<(String, PathBuf)>>> = Arc::default();
    let policy = {
        let asked = Arc::clone(&asked);
        ProjectTrust::ask(move |r| {
            asked
                .lock()
                .unwrap()
                .push((r.name.clone(), r.source.path.clone()));
            match r.name.as_str() {
                "yes" => TrustDecision::Approve,
                "once" => TrustDecision::AllowOnce,
                _ => TrustDecision::Deny,
            }
        })
    };
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(policy.clone()));
    let on: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["mine", "once", "yes"]);
    let mut names: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["no", "once", "yes"],
        "the user-level server is not asked about"
    );
    assert!(asked
        .lock()
        .unwrap()
        .iter()
        .all(|(_, p)| p.ends_with(".vscode/mcp.json")));
    // The same policy does not ask twice.
    load_all_mcp_configs(&repo.project(), &repo.config(policy));
    assert_eq!(asked.lock().unwrap().len(), 3);
    // Only "yes" was remembered.
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    let on: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["mine", "yes"]);
    let no = loaded.discovered.iter().find(|d| d.name == "no").unwrap();
    assert_eq!(no.skipped.as_deref(), Some("needs approval"));

    let all = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::TrustAll));
    assert_eq!(all.configs.len(), 4);
    let after = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    let on: Vec<&str> = after.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["mine", "yes"], "TrustAll remembers nothing");

    let user_only = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::UserOnly));
    let on: Vec<&str> = user_only.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["mine"], "not even the approved project server");
}

#[test]
fn claude_codes_own_answers_count_but_a_project_cannot_approve_itself() {
    let repo = Clone_::new("claude");
    let project = repo.project();
    repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {"approved": {"command": "a"}, "rejected": {"command": "b"},
                               "other": {"command": "c"}, "off": {"command": "d"}}}),
    );
    // Claude Code records its dialog's answers in the project's entry of ~/.claude.json.
    repo.write(
        "home/.claude.json",
        &json!({"projects": {project.to_string_lossy(): {
            "allowedTools": [],
            "enabledMcpjsonServers": ["approved"],
            "disabledMcpjsonServers": ["rejected"],
            "disabledMcpServers": ["off"],
            "hasTrustDialogAccepted": true
        }}}),
    );
    // A repository's own settings cannot approve its servers (a rejection there counts).
    repo.write(
        "project/.claude/settings.json",
        &json!({"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["other"]}),
    );
    let loaded = load_all_mcp_configs(&project, &repo.config(ProjectTrust::Report));
    let by = |n: &str| loaded.discovered.iter().find(|d| d.name == n).unwrap();
    assert!(loaded.configs.contains_key("approved"));
    assert!(
        matches!(&by("approved").trust, TrustState::ApprovedByTool(w) if w.contains("enabledMcpjsonServers")),
        "{:?}",
        by("approved").trust
    );
    assert!(by("rejected")
        .skipped
        .as_deref()
        .unwrap()
        .contains("disabledMcpjsonServers"));
    assert_eq!(by("other").skipped.as_deref(), Some("needs approval"));
    assert!(by("off")
        .skipped
        .as_deref()
        .unwrap()
        .contains("disabledMcpServers"));
    // In the user's own settings, enableAllProjectMcpServers approves the rest.
    repo.write(
        "home/.claude/settings.json",
        &json!({"enableAllProjectMcpServers": true}),
    );
    let loaded = load_all_mcp_configs(&project, &repo.config(ProjectTrust::Report));
    let on: Vec<&str> = loaded.configs.keys().map(String::as_str).collect();
    assert_eq!(on, ["approved", "other"]);
    // And a rejection in the project's local settings still wins over it.
    repo.write(
        "project/.claude/settings.local.json",
        &json!({"disabledMcpjsonServers": ["other"]}),
    );
    let loaded = load_all_mcp_configs(&project, &repo.config(ProjectTrust::Report));
    assert!(!loaded.configs.contains_key("other"));
}

#[test]
fn project_config_off_drops_them_entirely() {
    let repo = Clone_::new("off");
    repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {"p": {"command": "a"}}}),
    );
    let mut options = repo.config(ProjectTrust::TrustAll);
    options.enable_project_config = false;
    let loaded = load_all_mcp_configs(&repo.project(), &options);
    assert!(loaded.configs.is_empty());
    assert!(loaded.needs_approval().is_empty());
}

#[test]
fn the_session_and_the_mcp_commands_report_and_approve() {
    let repo = Clone_::new("session");
    let mcp_json = repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {"local": repo.spawning_server("local", "")}}),
    );
    let mut manager = ManagerOptions::default();
    manager.connect.timeout = Duration::from_secs(20);
    let session = create_agent_session(SessionOptions {
        cwd: repo.project(),
        config: repo.config(ProjectTrust::Report),
        manager,
        default_cache: false,
        ..SessionOptions::default()
    });
    assert_eq!(session.needs_approval().len(), 1);
    let status = session.run_command("/mcp status");
    assert!(
        status.contains(&format!(
            "local: needs approval (declared in {})",
            mcp_json.display()
        )),
        "{status}"
    );
    let tested = session.run_command("/mcp test local");
    assert!(tested.contains("needs approval"), "{tested}");
    let list = session.run_command("/mcp list");
    assert!(list.contains("local (off: needs approval)"), "{list}");
    assert_eq!(repo.ran("local"), (false, false));

    let trusted = session.run_command("/mcp trust local");
    assert!(trusted.contains("Trusted MCP server local"), "{trusted}");
    assert!(trusted.contains("Connected: local"), "{trusted}");
    assert_eq!(repo.ran("local"), (true, true));
    assert!(session.needs_approval().is_empty());
    assert!(session
        .active_tools()
        .iter()
        .any(|t| t.name() == "mcp_local_echo"));

    let untrusted = session.run_command("/mcp untrust local");
    assert!(untrusted.contains("needs approval again"), "{untrusted}");
    assert!(session.active_tools().is_empty());
    assert!(session
        .run_command("/mcp status")
        .contains("local: needs approval"));
    session.close();
}

#[test]
fn a_project_exa_key_reaches_the_host_only_once_approved() {
    let repo = Clone_::new("exa");
    std::env::set_var("MCP_TRUST_TEST_EXA", "users-other-secret");
    repo.write(
        "project/.mcp.json",
        &json!({"mcpServers": {"web": {"url": "https://mcp.exa.ai/mcp?exaApiKey=${MCP_TRUST_TEST_EXA}"}}}),
    );
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    assert!(
        loaded.exa_api_keys.is_empty(),
        "{:?}",
        loaded.exa_api_keys.len()
    );
    assert_eq!(loaded.needs_approval()[0].name, "web");
    trust_servers(&repo.project(), &repo.config(ProjectTrust::Report), &[]).unwrap();
    let loaded = load_all_mcp_configs(&repo.project(), &repo.config(ProjectTrust::Report));
    assert_eq!(loaded.exa_api_keys, ["users-other-secret"]);
    assert!(loaded.configs.is_empty(), "still filtered as an Exa server");
}
