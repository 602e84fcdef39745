//! Getting a server from the MCP Registry through the `mcp` command, against a registry of the
//! test's own on 127.0.0.1 (tests/common/registry.rs): `registry search` and `registry show`;
//! `add` shows what will run and writes nothing without consent, writes exactly what it showed
//! (what `servers` lists, what starts), approves a project entry, warns of a deprecated one,
//! asks on a terminal (a secret without echo); and real npm and PyPI entries, added, connect
//! through npx and uvx as a user's would.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::registry::{listed, TestRegistry};
use serde_json::Value;

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// The registry's entries: the documentation's and the schema's examples, one deprecated.
fn examples() -> Vec<Value> {
    vec![
        listed(
            include_str!("data/registry/docs/pypi-weather.json"),
            "deprecated",
            true,
        ),
        listed(
            include_str!("data/registry/docs/filesystem.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/valid/with-remote.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/docs/remote-url-template.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/docs/nuget.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/docs/docker-database.json"),
            "active",
            true,
        ),
    ]
}

struct Place {
    root: PathBuf,
}

impl Place {
    fn new(name: &str) -> Place {
        let root = common::temp_dir(&format!("cli-install-{name}"));
        std::fs::create_dir_all(root.join("project")).unwrap();
        Place { root }
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn project(&self) -> PathBuf {
        self.root.join("project")
    }
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = common::cli(&self.home());
        cmd.arg("--cwd").arg(self.project()).args(args);
        cmd
    }
    fn mcp(&self, args: &[&str]) -> Output {
        let mut cmd = self.command(args);
        cmd.stdin(std::process::Stdio::null());
        common::npm::output_within(cmd, Duration::from_secs(120)).expect("mcp finished")
    }
    fn user_file(&self) -> PathBuf {
        self.home().join(".mcp-runtime/mcp.json")
    }
    fn project_file(&self) -> PathBuf {
        self.project().join(".mcp-runtime/mcp.json")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn registry_search_and_show_list_entries_their_ways_and_questions() {
    let registry = TestRegistry::start(examples());
    let place = Place::new("search");
    let out = place.mcp(&["registry", "search", "weather", "--registry", &registry.url]);
    let listing = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        listing.contains("io.github.example/weather-mcp")
            && listing.contains("[deprecated]")
            && listing.contains("io.github.user/remote-weather"),
        "{listing}"
    );
    assert!(!listing.contains("filesystem"), "{listing}");

    // Paging: more than four entries are two pages; the first says how to get the next.
    let out = place.mcp(&["registry", "search", "io", "--registry", &registry.url]);
    let err = text(&out.stderr);
    assert!(err.contains("--cursor"), "{err}");
    let out = place.mcp(&[
        "--json",
        "registry",
        "search",
        "io",
        "--registry",
        &registry.url,
    ]);
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["servers"].as_array().unwrap().len(), 4);
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let out = place.mcp(&[
        "--json",
        "registry",
        "search",
        "io",
        "--registry",
        &registry.url,
        "--cursor",
        &cursor,
    ]);
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["servers"].as_array().unwrap().len(), 2, "{page}");
    assert!(page["nextCursor"].is_null());

    // One entry: its ways and what each asks.
    let out = place.mcp(&[
        "registry",
        "show",
        "io.github.example/weather-mcp",
        "--registry",
        &registry.url,
    ]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(shown.contains("(deprecated)"), "{shown}");
    assert!(shown.contains("versions: 0.5.0"), "{shown}");
    assert!(
        shown.contains("0. pypi weather-mcp-server 0.5.0"),
        "{shown}"
    );
    assert!(
        shown.contains("env:WEATHER_API_KEY (required, secret): API key for weather service"),
        "{shown}"
    );
    assert!(
        shown.contains("env:WEATHER_UNITS (default celsius)"),
        "{shown}"
    );

    // A server the registry does not have is a usage error (2); a registry that cannot be
    // reached is unavailable (69): one line each.
    let out = place.mcp(&[
        "registry",
        "show",
        "io.github.example/none",
        "--registry",
        &registry.url,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("mcp: ") && err.lines().count() == 1,
        "{err}"
    );
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let out = place.mcp(&["registry", "search", "x", "--registry", &gone]);
    assert_eq!(out.status.code(), Some(69), "{}", text(&out.stderr));
}

/// The `command:` line `add` showed (and `servers` shows) for `name`.
fn command_line(listing: &str) -> String {
    listing
        .lines()
        .find(|l| l.trim_start().starts_with("command: "))
        .unwrap_or_else(|| panic!("no command line in {listing}"))
        .trim()
        .to_owned()
}

#[test]
fn add_writes_nothing_without_consent_and_then_exactly_what_it_showed() {
    let registry = TestRegistry::start(examples());
    let place = Place::new("consent");
    let weather = "io.github.example/weather-mcp";
    let url = registry.url.as_str();

    // A required answer missing: nothing is written, and the way to give it is said.
    let out = place.mcp(&["add", weather, "--yes", "--registry", url]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("WEATHER_API_KEY") && err.contains("--set KEY=VALUE"),
        "{err}"
    );
    assert!(!place.project_file().exists());

    // Not on a terminal and no --yes: what would run is shown, nothing is written.
    let set = "env:WEATHER_API_KEY=sk-secret-value-1234";
    let out = place.mcp(&["add", weather, "--set", set, "--registry", url]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stdout);
    let err = text(&out.stderr);
    assert!(
        shown.contains("from: io.github.example/weather-mcp 0.5.0, pypi weather-mcp-server 0.5.0"),
        "{shown}"
    );
    assert!(
        shown.contains("    command: uvx weather-mcp-server==0.5.0"),
        "{shown}"
    );
    assert!(
        shown.contains("env: WEATHER_API_KEY, WEATHER_UNITS (values not shown)"),
        "{shown}"
    );
    assert!(
        err.contains("warning: io.github.example/weather-mcp 0.5.0 is deprecated"),
        "{err}"
    );
    assert!(err.contains("nothing was added"), "{err}");
    assert!(!shown.contains("sk-secret") && !err.contains("sk-secret"));
    assert!(!place.project_file().exists() && !place.user_file().exists());

    // --yes: written to the project, approved for exactly what was shown.
    let out = place.mcp(&["add", weather, "--set", set, "--yes", "--registry", url]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(!shown.contains("sk-secret"));
    assert!(
        shown.contains(&format!("added to {}", place.project_file().display())),
        "{shown}"
    );
    let listing = text(&place.mcp(&["servers"]).stdout);
    assert_eq!(command_line(&listing), command_line(&shown), "{listing}");
    let rows: Vec<Value> =
        serde_json::from_slice(&place.mcp(&["--json", "servers"]).stdout).unwrap();
    let row = rows.iter().find(|r| r["name"] == "weather-mcp").unwrap();
    assert_eq!(row["trust"], "approved", "{row}");
    assert_eq!(row["command"], "uvx");
    assert_eq!(
        row["args"],
        serde_json::json!(["weather-mcp-server==0.5.0"])
    );
    // The same name again is refused before anything is asked.
    let out = place.mcp(&["add", weather, "--set", set, "--yes", "--registry", url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("already exists"));

    // A remote with a URL variable and a secret header, to the user's file under another
    // name; the header's value a reference, so the secret stays out of the file.
    let out = place.mcp(&[
        "add",
        "io.github.user/remote-weather",
        "--as",
        "weather-eu",
        "--scope",
        "user",
        "--yes",
        "--registry",
        url,
        "--set",
        "var:host=eu.weather.example",
        "--set",
        "header:Authorization=Bearer ${WEATHER_TOKEN}",
    ]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    assert!(
        shown.contains("    http: https://eu.weather.example/mcp"),
        "{shown}"
    );
    assert!(
        shown.contains("    headers: Authorization (values not shown)"),
        "{shown}"
    );
    let file = std::fs::read_to_string(place.user_file()).unwrap();
    let written: Value = serde_json::from_str(&file).unwrap();
    let server = &written["mcpServers"]["weather-eu"];
    assert_eq!(server["url"], "https://eu.weather.example/mcp", "{server}");
    assert_eq!(
        server["headers"]["Authorization"], "Bearer ${WEATHER_TOKEN}",
        "{server}"
    );
}

#[test]
fn nuget_and_oci_entries_show_the_command_they_run() {
    let registry = TestRegistry::start(examples());
    let place = Place::new("commands");
    let show = |name: &str, sets: &[&str]| {
        let mut args = vec!["add", name, "--registry", registry.url.as_str()];
        for s in sets {
            args.push("--set");
            args.push(s);
        }
        let out = place.mcp(&args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        command_line(&text(&out.stdout))
    };
    let nuget = show(
        "io.github.joelverhagen/knapcode-samplemcpserver",
        &["env:WEATHER_CHOICES=sunny,rainy"],
    );
    assert!(
        nuget.starts_with("command: dnx Knapcode.SampleMcpServer@0.5.0 --yes"),
        "{nuget}"
    );
    let oci = show(
        "io.github.example/database-manager",
        &[
            "var:db_type=postgres",
            "env:DB_USERNAME=shop",
            "env:DB_PASSWORD=${DB_PASSWORD}",
            "arg:database_name=orders",
        ],
    );
    assert_eq!(
        oci,
        "command: docker run -i --rm --network host -e DB_TYPE=postgres -e DB_PASSWORD \
         -e DB_USERNAME -e SSL_MODE oci.registry.example/example/database-manager-mcp:3.1.0 \
         --host localhost orders"
    );
}

/// `mcp ARGS` on a terminal (a pty made by `script`): each `(prompt, typed)` is typed once
/// `prompt` has shown (so the terminal's own echo of what is typed is the program's to turn
/// off); then its whole output (stdout and stderr, as the terminal shows them) and status.
fn on_a_terminal(place: &Place, args: &str, dialogue: &[(&str, &str)]) -> Option<(String, i32)> {
    use std::io::{Read, Write};
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        return common::npm::missing(
            "`script` (util-linux) is missing: the terminal test cannot run",
        );
    }
    let line = format!(
        "'{}' --cwd '{}' {args}",
        common::cli_path().display(),
        place.project().display()
    );
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("HOME", place.home())
        .env("XDG_CACHE_HOME", place.home().join(".cache"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut seen = String::new();
    let mut from = 0;
    for (prompt, typed) in dialogue {
        while !seen[from..].contains(prompt) {
            match rx.recv_deadline(deadline) {
                Ok(bytes) => seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("no {prompt:?} within a minute: {seen}");
                }
            }
        }
        from = seen[from..].find(prompt).unwrap() + from + prompt.len();
        stdin.write_all(typed.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    loop {
        match rx.recv_deadline(deadline) {
            Ok(bytes) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the command did not end within a minute: {seen}");
            }
        }
    }
    let status = child.wait().unwrap();
    Some((seen, status.code().unwrap_or(-1)))
}

#[test]
fn on_a_terminal_add_asks_each_question_a_secret_unechoed_and_then_for_consent() {
    let registry = TestRegistry::start(examples());
    let place = Place::new("terminal");
    std::fs::create_dir_all(place.home()).unwrap();
    let args = format!(
        "add io.github.example/weather-mcp --registry {}",
        registry.url
    );
    // The key (typed, not echoed), the units left at their default, then "n".
    let Some((said, status)) = on_a_terminal(
        &place,
        &args,
        &[
            ("keeps it out of the file", "sk-typed-secret-77\n"),
            ("WEATHER_UNITS (default celsius)", "\n"),
            ("Add weather-mcp? [y/N", "n\n"),
        ],
    ) else {
        return;
    };
    assert_eq!(status, 1, "{said}");
    assert!(
        said.contains("env:WEATHER_API_KEY (required, secret)"),
        "{said}"
    );
    assert!(
        said.contains("command: uvx weather-mcp-server==0.5.0"),
        "{said}"
    );
    assert!(!said.contains("sk-typed-secret"), "{said}");
    assert!(said.contains("nothing was added"), "{said}");
    assert!(!place.project_file().exists());

    let (said, status) = on_a_terminal(
        &place,
        &args,
        &[
            ("keeps it out of the file", "${WEATHER_API_KEY}\n"),
            ("WEATHER_UNITS (default celsius)", "fahrenheit\n"),
            ("Add weather-mcp? [y/N", "y\n"),
        ],
    )
    .unwrap();
    assert_eq!(status, 0, "{said}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(place.project_file()).unwrap()).unwrap();
    let env = &written["mcpServers"]["weather-mcp"]["env"];
    assert_eq!(env["WEATHER_API_KEY"], "${WEATHER_API_KEY}", "{written}");
    assert_eq!(env["WEATHER_UNITS"], "fahrenheit", "{written}");
}

/// `mcp ARGS` with `uvx` on the PATH and the package managers' caches shared between runs
/// (`.interop/`), no Python downloaded (the system's is used).
fn as_a_user(place: &Place, args: &[&str], uv: Option<&Path>) -> Output {
    let mut cmd = place.command(args);
    let interop = common::npm::interop_dir();
    cmd.env("npm_config_cache", interop.join("npm-cache"))
        .env("UV_CACHE_DIR", interop.join("uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never");
    if let Some(uv) = uv {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![uv.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    }
    common::npm::output_within(cmd, Duration::from_secs(300)).expect("mcp finished")
}

#[test]
fn npm_and_pypi_entries_added_from_the_registry_connect_through_npx_and_uvx() {
    if !common::npm::has_node() {
        common::npm::missing::<()>("node is not installed: the npm entry cannot run");
        return;
    }
    let Some(uv) = common::npm::uv_bin_dir() else {
        return;
    };
    let everything = include_str!("data/registry/real/everything.json");
    assert!(everything.contains(&format!("\"version\": \"{}\"", common::everything::VERSION)));
    let registry = TestRegistry::start(vec![
        listed(everything, "active", true),
        listed(include_str!("data/registry/real/time.json"), "active", true),
    ]);
    let place = Place::new("real");
    for name in [
        "io.github.modelcontextprotocol/everything",
        "io.github.modelcontextprotocol/time",
    ] {
        let out = as_a_user(
            &place,
            &[
                "add",
                name,
                "--yes",
                "--scope",
                "user",
                "--registry",
                &registry.url,
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let listing = text(&place.mcp(&["servers"]).stdout);
    assert!(
        listing.contains(&format!(
            "command: npx -y @modelcontextprotocol/server-everything@{} stdio",
            common::everything::VERSION
        )),
        "{listing}"
    );
    assert!(
        listing.contains("command: uvx mcp-server-time==2026.10.19 --local-timezone UTC"),
        "{listing}"
    );

    let out = as_a_user(
        &place,
        &["--json", "--timeout", "240000", "tools"],
        Some(&uv),
    );
    let tools: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}{}", text(&out.stdout), text(&out.stderr)));
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"mcp_everything_echo"),
        "{names:?} {}",
        text(&out.stderr)
    );
    assert!(
        names.contains(&"mcp_time_get_current_time"),
        "{names:?} {}",
        text(&out.stderr)
    );
    let out = as_a_user(
        &place,
        &[
            "call",
            "mcp_time_convert_time",
            "source_timezone=UTC",
            "time=12:00",
            "target_timezone=Asia/Tokyo",
        ],
        Some(&uv),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("21:00"), "{}", text(&out.stdout));
}
