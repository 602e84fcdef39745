//! The trust gate through the `mcp` CLI: in a freshly cloned repository nothing runs and
//! nothing resolves until `mcp trust`; a changed config asks again; `--trust-project` is for
//! one run; `--no-project-config` ignores the project; `servers` and `status` say why.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

struct Repo {
    root: PathBuf,
}

impl Repo {
    fn new(name: &str) -> Repo {
        let root = common::temp_dir(&format!("cli-trust-{name}"));
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project")).unwrap();
        Repo { root }
    }
    fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    fn marker(&self, what: &str) -> PathBuf {
        self.root.join(format!("ran-{what}"))
    }
    /// The cloned repository's `.mcp.json`: a server that leaves a marker when spawned and
    /// another when its `!command` env value is resolved.
    fn write_mcp_json(&self, extra: &str) -> PathBuf {
        let server = json!({
            "command": "sh",
            "args": ["-c", format!("touch '{}'; exec '{}' {extra}", self.marker("spawn").display(), common::server_path())],
            "env": {"FROM_COMMAND": format!("!touch '{}'; echo v", self.marker("command").display())}
        });
        let path = self.project().join(".mcp.json");
        std::fs::write(&path, json!({"mcpServers": {"repo": server}}).to_string()).unwrap();
        path
    }
    fn mcp(&self, args: &[&str]) -> Output {
        common::cli(&self.root.join("home"))
            .arg("--cwd")
            .arg(self.project())
            .args(args)
            .output()
            .unwrap()
    }
    fn ran(&self) -> (bool, bool) {
        (
            self.marker("spawn").exists(),
            self.marker("command").exists(),
        )
    }
    fn forget_markers(&self) {
        let _ = std::fs::remove_file(self.marker("spawn"));
        let _ = std::fs::remove_file(self.marker("command"));
    }
}

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn json_rows(o: &Output) -> Vec<Value> {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter().find(|r| r["name"] == name).expect(name)
}

#[test]
fn a_cloned_repository_needs_mcp_trust_and_a_changed_config_asks_again() {
    let repo = Repo::new("clone");
    let mcp_json = repo.write_mcp_json("");

    // tools: nothing runs, nothing resolves; stderr says how to approve; not a failure.
    let out = repo.mcp(&["tools"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(err.contains("needs approval"), "{err}");
    assert!(err.contains("mcp trust repo"), "{err}");
    assert!(err.contains(&mcp_json.display().to_string()), "{err}");
    assert_eq!(repo.ran(), (false, false));

    // status: needs approval, with the declaring file.
    let rows = json_rows(&repo.mcp(&["--json", "status"]));
    let r = row(&rows, "repo");
    assert_eq!(r["status"], "needs approval");
    assert_eq!(r["path"], mcp_json.display().to_string());
    assert_eq!(r["level"], "project");
    // servers: the trust state and the reason it is skipped.
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    let r = row(&rows, "repo");
    assert_eq!(r["trust"], "needs approval");
    assert_eq!(r["skipped"], "needs approval");
    assert_eq!(r["enabled"], false);
    assert_eq!(repo.ran(), (false, false));

    // trust: remembered; now it runs.
    let out = repo.mcp(&["trust", "repo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("trusted repo"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(repo.ran(), (false, false), "trusting starts nothing");
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    assert_eq!(row(&rows, "repo")["trust"], "approved");
    let out = repo.mcp(&["tools"]);
    assert!(
        text(&out.stdout).contains("mcp_repo_echo"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(repo.ran(), (true, true));

    // A changed config asks again.
    repo.forget_markers();
    repo.write_mcp_json("--tools 1");
    let out = repo.mcp(&["tools"]);
    assert!(
        text(&out.stderr).contains("needs approval"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(repo.ran(), (false, false));

    // --trust-project: this run only.
    let out = repo.mcp(&["--trust-project", "tools"]);
    assert!(
        text(&out.stdout).contains("mcp_repo_tool_0"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(repo.ran(), (true, true));
    repo.forget_markers();
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    assert_eq!(
        row(&rows, "repo")["trust"],
        "needs approval",
        "nothing remembered"
    );

    // --all approves every waiting server; untrust forgets.
    let out = repo.mcp(&["trust", "--all"]);
    assert!(
        text(&out.stdout).contains("trusted repo"),
        "{}",
        text(&out.stdout)
    );
    let out = repo.mcp(&["untrust", "repo"]);
    assert!(
        text(&out.stdout).contains("needs approval again"),
        "{}",
        text(&out.stdout)
    );
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    assert_eq!(row(&rows, "repo")["trust"], "needs approval");
    assert_eq!(repo.ran(), (false, false));

    // The store is the user's, private.
    let store = repo.root.join("home/.mcp-runtime/trusted.json");
    assert!(store.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&store).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

#[test]
fn no_project_config_ignores_the_project_and_trust_refuses_unknown_names() {
    let repo = Repo::new("off");
    repo.write_mcp_json("");
    let rows = json_rows(&repo.mcp(&["--no-project-config", "--json", "servers"]));
    assert_eq!(
        row(&rows, "repo")["skipped"],
        "project-level config is disabled"
    );
    let out = repo.mcp(&["--no-project-config", "tools"]);
    assert!(
        !text(&out.stderr).contains("needs approval"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(repo.ran(), (false, false));

    let out = repo.mcp(&["trust", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no such server"),
        "{}",
        text(&out.stderr)
    );
    let out = repo.mcp(&["trust"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn servers_explains_every_skip_and_lists_problems_and_warnings() {
    let repo = Repo::new("explain");
    let home = repo.root.join("home");
    let write = |path: &Path, v: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v).unwrap();
    };
    write(
        &home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"shared": {"command": "user"}, "off": {"command": "x", "disabled": true}}}"#,
    );
    write(
        &repo.project().join("mcp.json"),
        r#"{"mcpServers": {"shared": {"command": "loses"}, "bad": "not an object"}}"#,
    );
    write(&home.join(".gemini/settings.json"), "{ broken");
    let out = repo.mcp(&["--json", "servers"]);
    let rows = json_rows(&out);
    assert_eq!(row(&rows, "off")["skipped"], "disabled: true");
    let shadowed = rows
        .iter()
        .find(|r| r["name"] == "shared" && r["shadowed"] == true)
        .unwrap();
    assert_eq!(shadowed["skipped"], "shadowed by a higher-priority source");
    assert!(row(&rows, "bad")["skipped"]
        .as_str()
        .unwrap()
        .starts_with("invalid: "));
    let err = text(&out.stderr);
    assert!(err.contains("warning: [Gemini CLI]"), "{err}");
}

/// `mcp ARGS` run on a terminal (a pty made by `script`), typing `answer`.
fn on_a_terminal(repo: &Repo, args: &str, answer: &str) -> Option<Output> {
    use std::io::Write;
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").is_err(),
            "`script` (util-linux) is missing: the terminal test cannot run"
        );
        eprintln!("skipping: `script` (util-linux) is not installed");
        return None;
    }
    let line = format!(
        "'{}' --cwd '{}' {args}",
        common::cli_path().display(),
        repo.project().display()
    );
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("HOME", repo.root.join("home"))
        .env("XDG_CACHE_HOME", repo.root.join("home/.cache"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    Some(child.wait_with_output().unwrap())
}

#[test]
fn servers_and_trust_show_what_is_approved_and_what_changed_and_a_terminal_is_asked() {
    let repo = Repo::new("display");
    let file = repo.project().join(".mcp.json");
    let write = |args: Value, env: Value| {
        let server = json!({"command": "node", "args": args, "env": env});
        std::fs::write(&file, json!({"mcpServers": {"files": server}}).to_string()).unwrap();
    };
    write(
        json!(["server.js", "--root", "a dir"]),
        json!({"API_KEY": "sk-one-111"}),
    );

    // What is to be approved: the command line and the names of the env values.
    let out = repo.mcp(&["servers"]);
    let listing = text(&out.stdout);
    assert!(
        listing.contains("    command: node server.js --root 'a dir'"),
        "{listing}"
    );
    assert!(
        listing.contains("    env: API_KEY (values not shown)"),
        "{listing}"
    );
    assert!(!listing.contains("sk-one"), "{listing}");
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    let files = row(&rows, "files");
    assert_eq!(files["command"], "node");
    assert_eq!(files["args"], json!(["server.js", "--root", "a dir"]));
    assert_eq!(files["env"], json!(["API_KEY"]));

    // On a terminal, trust shows it and asks; "n" trusts nothing.
    if let Some(out) = on_a_terminal(&repo, "trust files", "n\n") {
        let said = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(
            said.contains("command: node server.js") && said.contains("[y/N]"),
            "{said}"
        );
        assert!(said.contains("nothing was trusted"), "{said}");
        let rows = json_rows(&repo.mcp(&["--json", "servers"]));
        assert_eq!(row(&rows, "files")["trust"], "needs approval");
        let out = on_a_terminal(&repo, "trust files", "y\n").unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        assert!(text(&out.stdout).contains("trusted files"));
    } else {
        // Not a terminal: the command itself is the consent.
        let out = repo.mcp(&["trust", "files"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let rows = json_rows(&repo.mcp(&["--json", "servers"]));
    assert_eq!(row(&rows, "files")["trust"], "approved");

    // A changed config asks again and says what changed, never a value.
    write(json!(["evil.js"]), json!({"API_KEY": "sk-two-222"}));
    let out = repo.mcp(&["servers"]);
    let listing = text(&out.stdout);
    assert!(
        listing.contains("changed since its approval: args: server.js --root 'a dir' → evil.js; env API_KEY: changed"),
        "{listing}"
    );
    let err = text(&out.stderr);
    assert!(err.contains("approve it with `mcp trust files`"), "{err}");
    assert!(
        !listing.contains("sk-") && !err.contains("sk-"),
        "{listing}{err}"
    );
    // Each waiting server is one line naming its file once.
    let out = repo.mcp(&["tools"]);
    let err = text(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("needs approval"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        line.matches(&file.display().to_string()).count(),
        1,
        "{line}"
    );
    let out = repo.mcp(&["trust", "files"]);
    let said = text(&out.stdout);
    assert!(said.contains("changed since its approval: args:"), "{said}");
    assert!(said.contains("trusted files"), "{said}");
}
