//! The `/mcp` command controller: what a host's `/mcp ...` line does. Every subcommand returns
//! plain text for the host to print. Config edits go through the [`ConfigWriter`] (atomic
//! writes of the host's own files); enabling or disabling one server connects or disconnects
//! that server only. Every subcommand that discovers (reload, list, add, enable, disable,
//! test, reconnect) reports a discovery that fails outright (a config source that panics) as
//! `Error: .mcp.json: <what>` and changes nothing; reload discovers before it disconnects, so a
//! failed reload leaves the servers and their tools in place.
//!
//! ```text
//! /mcp reload                      disconnect all, discover again, connect, refresh the tools
//! /mcp list                        servers grouped by source and level, with their state
//! /mcp status                      every server's state, error and tool count
//! /mcp add <name> [--scope project|user] [--url URL [--transport http|sse]] [--header K:V]...
//!          [-- command args...]
//! /mcp remove|rm <name> [--scope project|user]
//! /mcp enable <name> | disable <name>
//! /mcp test <name>                 a temporary connection: server info and up to 10 tools
//! /mcp reconnect <name>
//! /mcp trust <name>... | --all      approve project servers (remembered for their config)
//! /mcp untrust <name>              forget a project server's approval (and disconnect it)
//! /mcp help
//! ```
//!
//! A project server that waits for approval is shown as `needs approval` by `list` and
//! `status`, with the file that declared it; `test` and `reconnect` refuse it until it is
//! approved.

use std::collections::BTreeMap;

use crate::client::Client;
use crate::config::{resolve_server_config, ConfigWriter, Level, LoadedConfigs, ServerConfig};
use crate::host::loader::LoadError;
use crate::host::session::AgentSession;
use crate::manager::ConnectReport;

/// The help text.
pub const HELP: &str = "\
/mcp reload                       disconnect all servers, discover again, reconnect
/mcp list                         servers by source and level, with their state
/mcp status                       each server's state, error and tools
/mcp add <name> [--scope project|user] [--url URL [--transport http|sse]] [--header K:V]... [-- command args...]
/mcp remove <name> [--scope project|user]   (also: rm)
/mcp enable <name>                turn a server on (and connect it)
/mcp disable <name>               turn a server off (and disconnect it)
/mcp test <name>                  connect once: server info and up to 10 tools
/mcp reconnect <name>             disconnect and connect one server
/mcp trust <name>... | --all      approve project servers (remembered until their config changes)
/mcp untrust <name>               forget a project server's approval and disconnect it
/mcp help                         this text";

/// Whether `line` is a `/mcp` command that edits config files (`add`, `remove`/`rm`,
/// `enable`, `disable`): a host may want to confirm it first.
pub fn command_edits_config(line: &str) -> bool {
    let words = split_words(line);
    words.first().map(String::as_str) == Some("/mcp")
        && matches!(
            words.get(1).map(String::as_str),
            Some("add" | "remove" | "rm" | "enable" | "disable")
        )
}

impl AgentSession {
    /// Runs one `/mcp` command line (with or without the leading `/mcp`; see
    /// [`COMMANDS_HELP`](crate::host::COMMANDS_HELP)) on this session; returns the text to
    /// show.
    ///
    /// ```no_run
    /// let session = mcp_runtime::create_agent_session(Default::default());
    /// println!("{}", session.run_command("/mcp status"));
    /// println!("{}", session.run_command("/mcp add memory -- npx -y @modelcontextprotocol/server-memory"));
    /// ```
    pub fn run_command(&self, line: &str) -> String {
        Commands { session: self }.run(line)
    }
}

/// The commands, run on one session.
struct Commands<'a> {
    session: &'a AgentSession,
}

impl Commands<'_> {
    /// Runs one command line (with or without the leading `/mcp`); returns the text to show.
    fn run(&self, line: &str) -> String {
        let words = split_words(line);
        let mut words: Vec<&str> = words.iter().map(String::as_str).collect();
        if words.first() == Some(&"/mcp") {
            words.remove(0);
        }
        let Some((&sub, rest)) = words.split_first() else {
            return HELP.to_owned();
        };
        if self.session.manager().is_none()
            && !matches!(sub, "help" | "list" | "add" | "remove" | "rm")
        {
            return "MCP is disabled for this session.".to_owned();
        }
        let result = match sub {
            "help" => Ok(HELP.to_owned()),
            "reload" => self.reload(),
            "list" => self.list(),
            "status" => Ok(self.status()),
            "add" => self.add(rest),
            "remove" | "rm" => self.remove(rest),
            "enable" => self.toggle(rest, true),
            "disable" => self.toggle(rest, false),
            "test" => self.test(rest),
            "reconnect" => self.reconnect(rest),
            "trust" => self.trust(rest),
            "untrust" => self.untrust(rest),
            other => return format!("Unknown subcommand: {other}. Type /mcp help for usage."),
        };
        result.unwrap_or_else(|e| format!("Error: {e}"))
    }

    /// The session's manager (`run` refuses these commands without one).
    fn manager(&self) -> Result<&crate::manager::McpManager, Failure> {
        self.session
            .manager()
            .ok_or_else(|| Failure("MCP is disabled for this session.".to_owned()))
    }

    fn writer(&self) -> ConfigWriter {
        ConfigWriter::new(self.session.cwd(), self.session.config_options())
    }

    fn discover(&self) -> Result<LoadedConfigs, Failure> {
        Ok(self.session.discover()?)
    }

    fn reload(&self) -> Result<String, Failure> {
        match self.session.reload() {
            None => Ok("MCP is disabled for this session.".to_owned()),
            Some(Ok(report)) => Ok(format!("Reloaded MCP servers.\n{}", summary(&report))),
            Some(Err(e)) => Err(Failure(format!(
                "{}: {}; nothing was reloaded, the servers stay as they were",
                e.path, e.error
            ))),
        }
    }

    fn list(&self) -> Result<String, Failure> {
        let loaded = self.discover()?;
        if loaded.discovered.is_empty() {
            return Ok("No MCP servers configured.".to_owned());
        }
        let mut groups: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for d in &loaded.discovered {
            let state = match (&d.skipped, self.session.manager()) {
                (Some(why), _) => format!("off: {why}"),
                (None, Some(m)) => m.connection_status(&d.name).as_str().to_owned(),
                (None, None) => "on".to_owned(),
            };
            let key = (
                d.source.provider_name.clone(),
                d.source.level.as_str().to_owned(),
                d.source.path.display().to_string(),
            );
            groups
                .entry(key)
                .or_default()
                .push(format!("  {} ({state})", d.name));
        }
        let mut out = Vec::new();
        for ((provider, level, path), servers) in groups {
            out.push(format!("{provider} [{level}] {path}"));
            out.extend(servers);
        }
        Ok(out.join("\n"))
    }

    fn status(&self) -> String {
        let Some(manager) = self.session.manager() else {
            return "MCP is disabled for this session.".to_owned();
        };
        let names = manager.server_names();
        let tools = manager.get_tools();
        let pending = self.session.needs_approval();
        if names.is_empty() && pending.is_empty() {
            return "No MCP servers connected.".to_owned();
        }
        let waiting = pending.iter().map(|d| {
            format!(
                "{}: needs approval (declared in {}) - /mcp trust {}",
                d.name,
                d.source.path.display(),
                d.name
            )
        });
        names
            .iter()
            .map(|name| {
                let status = manager.connection_status(name);
                let count = tools.iter().filter(|t| &t.server == name).count();
                let state = if status.needs_login() {
                    "needs login"
                } else {
                    status.as_str()
                };
                let mut line = format!("{name}: {state} ({count} tools)");
                if let Some(e) = status.error() {
                    line.push_str(&format!(" - {e}"));
                }
                line
            })
            .chain(waiting)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn trust(&self, args: &[&str]) -> Result<String, Failure> {
        let names: Vec<String> = match args {
            [] => return Err(Failure::from(usage("trust <name>... | --all"))),
            ["--all"] => Vec::new(),
            names => names.iter().map(|n| (*n).to_owned()).collect(),
        };
        let approved = crate::host::loader::trust_servers(
            self.session.cwd(),
            self.session.config_options(),
            &names,
        )?;
        if approved.is_empty() {
            return Ok("No project MCP server waits for approval.".to_owned());
        }
        let mut out = Vec::new();
        for d in &approved {
            out.push(format!(
                "Trusted MCP server {} (declared in {}).",
                d.name,
                d.source.path.display()
            ));
        }
        let loaded = self.discover()?;
        for d in &approved {
            out.push(self.connect_one_from(&d.name, &loaded));
        }
        Ok(out.join("\n"))
    }

    fn untrust(&self, args: &[&str]) -> Result<String, Failure> {
        let [name] = args else {
            return Err(Failure::from(usage("untrust <name>")));
        };
        let removed = crate::host::loader::untrust_server(
            self.session.cwd(),
            self.session.config_options(),
            name,
        )?;
        if !removed {
            return Ok(format!(
                "MCP server {name} has no approval in this project."
            ));
        }
        let manager = self.manager()?;
        let from_project = manager
            .source(name)
            .is_some_and(|s| s.level == crate::config::Level::Project);
        if from_project {
            manager.disconnect_server(name);
            self.session.refresh_from_manager();
        }
        // Discovered again so that status lists it as waiting.
        let _ = self.discover();
        Ok(format!(
            "Forgot the approval of MCP server {name}; it needs approval again."
        ))
    }

    fn add(&self, args: &[&str]) -> Result<String, Failure> {
        let (name, rest) = args.split_first().ok_or_else(|| usage("add <name> ..."))?;
        let mut scope = Level::Project;
        let mut config = ServerConfig::default();
        let mut i = 0;
        while i < rest.len() {
            let value = |i: usize| {
                rest.get(i + 1)
                    .copied()
                    .ok_or_else(|| usage(&format!("{} needs a value", rest[i])))
            };
            match rest[i] {
                "--scope" => {
                    scope = parse_scope(value(i)?)?;
                    i += 2;
                }
                "--url" => {
                    config.url = Some(value(i)?.to_owned());
                    i += 2;
                }
                "--transport" => {
                    let t = value(i)?;
                    if !matches!(t, "http" | "sse") {
                        return Err(Failure::from(usage("--transport is http or sse")));
                    }
                    config.transport = Some(t.to_owned());
                    i += 2;
                }
                "--header" => {
                    let (k, v) = value(i)?
                        .split_once(':')
                        .ok_or_else(|| usage("--header takes K:V"))?;
                    config
                        .headers
                        .insert(k.trim().to_owned(), v.trim().to_owned());
                    i += 2;
                }
                "--" => {
                    let argv = &rest[i + 1..];
                    let (command, args) = argv
                        .split_first()
                        .ok_or_else(|| usage("-- needs a command"))?;
                    config.command = Some((*command).to_owned());
                    config.args = args.iter().map(|a| (*a).to_owned()).collect();
                    i = rest.len();
                }
                other => return Err(Failure::from(usage(&format!("unexpected {other:?}")))),
            }
        }
        if config.command.is_none() && config.url.is_none() {
            return Err(Failure::from(usage(
                "add needs --url URL or -- command args...",
            )));
        }
        if config.transport.is_some() && config.url.is_none() {
            return Err(Failure::from(usage("--transport goes with --url")));
        }
        let problems = crate::config::validate_server_config(name, &config);
        if !problems.is_empty() {
            return Err(Failure::from(crate::error::Error::Config {
                message: problems.join("; "),
            }));
        }
        let writer = self.writer();
        writer.add(scope, name, &config)?;
        let mut out = format!(
            "Added MCP server {name} to {}.",
            writer.path(scope).display()
        );
        out.push('\n');
        // The user added it through the host: that is the approval (of exactly this entry).
        let written = writer.path(scope);
        let added_here = self
            .discover()?
            .needs_approval()
            .iter()
            .any(|d| d.name == *name && d.source.path == written);
        if added_here {
            crate::host::loader::trust_servers(
                self.session.cwd(),
                self.session.config_options(),
                &[(*name).to_owned()],
            )?;
        }
        out.push_str(&self.connect_one(name));
        Ok(out)
    }

    fn remove(&self, args: &[&str]) -> Result<String, Failure> {
        let name = *args
            .first()
            .ok_or_else(|| usage("remove <name> [--scope project|user]"))?;
        let scopes = match args.get(1..) {
            Some(["--scope", s]) => vec![parse_scope(s)?],
            Some([]) | None => vec![Level::Project, Level::User],
            _ => return Err(Failure::from(usage("remove <name> [--scope project|user]"))),
        };
        let writer = self.writer();
        let mut removed = Vec::new();
        for scope in scopes {
            if writer.remove(scope, name)? {
                removed.push(writer.path(scope).display().to_string());
            }
        }
        if removed.is_empty() {
            return Ok(format!(
                "MCP server {name} is not in this host's config files; use /mcp disable {name} to turn it off."
            ));
        }
        if let Some(m) = self.session.manager() {
            m.disconnect_server(name);
            self.session.refresh_from_manager();
        }
        Ok(format!(
            "Removed MCP server {name} from {}.",
            removed.join(" and ")
        ))
    }

    fn toggle(&self, args: &[&str], enable: bool) -> Result<String, Failure> {
        let name = *args.first().ok_or_else(|| {
            usage(if enable {
                "enable <name>"
            } else {
                "disable <name>"
            })
        })?;
        let found = self
            .discover()?
            .discovered
            .into_iter()
            .find(|d| d.name == name && !d.shadowed);
        let Some(found) = found else {
            return Ok(format!("No MCP server named {name}."));
        };
        self.writer()
            .set_enabled(name, enable, Some(&found.source))?;
        let manager = self.manager()?;
        if enable {
            Ok(format!(
                "Enabled MCP server {name}.\n{}",
                self.connect_one(name)
            ))
        } else {
            manager.disconnect_server(name);
            self.session.refresh_from_manager();
            Ok(format!("Disabled MCP server {name}."))
        }
    }

    fn reconnect(&self, args: &[&str]) -> Result<String, Failure> {
        let name = *args.first().ok_or_else(|| usage("reconnect <name>"))?;
        let manager = self.manager()?;
        // Discovery first: when it fails, the server stays connected as it was.
        let loaded = self.discover()?;
        manager.disconnect_server(name);
        Ok(self.connect_one_from(name, &loaded))
    }

    /// Connects one server (as discovery now sees it) and refreshes the session's tools.
    fn connect_one(&self, name: &str) -> String {
        match self.discover() {
            Ok(loaded) => self.connect_one_from(name, &loaded),
            Err(e) => format!("Error: {e}"),
        }
    }

    fn connect_one_from(&self, name: &str, loaded: &LoadedConfigs) -> String {
        let Some(manager) = self.session.manager() else {
            return String::new();
        };
        let (Some(config), Some(source)) = (loaded.configs.get(name), loaded.sources.get(name))
        else {
            if let Some(d) = loaded.needs_approval().into_iter().find(|d| d.name == name) {
                return loaded.approval_message(d);
            }
            return format!("{name} is not enabled, so it was not connected.");
        };
        let configs = BTreeMap::from([(name.to_owned(), config.clone())]);
        let sources = BTreeMap::from([(name.to_owned(), source.clone())]);
        let report = manager.connect_with(&configs, &sources);
        self.session.refresh_from_manager();
        summary(&report)
    }

    fn test(&self, args: &[&str]) -> Result<String, Failure> {
        let name = *args.first().ok_or_else(|| usage("test <name>"))?;
        let manager = self.manager()?;
        let loaded = self.discover()?;
        let found = loaded
            .discovered
            .iter()
            .find(|d| d.name == name && !d.shadowed);
        if let Some(d) = found.filter(|d| !d.trust.allows_start()) {
            return Ok(format!(
                "MCP server {name} is not tested: {}. {}",
                d.trust.describe(),
                loaded.approval_message(d)
            ));
        }
        let config = found
            .map(|d| d.config.clone())
            .or_else(|| manager.config(name));
        let Some(config) = config else {
            return Ok(format!("No MCP server named {name}."));
        };
        let options = manager.options();
        let resolved = resolve_server_config(name, &config, options.auth.as_deref());
        let endpoint = resolved.endpoint(&options.project_dir)?;
        let client = Client::connect(name, &endpoint, config.connect_options(&options.connect))?;
        let tools = client.list_tools();
        let info = client.server_info();
        let mut out = vec![format!(
            "Connected to {name}: {} {} (protocol {}, {})",
            info.name,
            info.version,
            client.protocol_version(),
            client.transport_kind()
        )];
        match tools {
            Ok(tools) => {
                out.push(format!("{} tools:", tools.len()));
                for t in tools.iter().take(10) {
                    out.push(format!(
                        "  {} - {}",
                        t.name,
                        t.description
                            .as_deref()
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("")
                    ));
                }
                if tools.len() > 10 {
                    out.push(format!("  ... and {} more", tools.len() - 10));
                }
            }
            Err(e) => out.push(format!("tools/list failed: {e}")),
        }
        client.close();
        Ok(out.join("\n"))
    }
}

/// Why a subcommand failed: the text after `Error: `.
#[derive(Debug)]
struct Failure(String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<crate::error::Error> for Failure {
    fn from(e: crate::error::Error) -> Failure {
        Failure(e.to_string())
    }
}

impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Failure {
        Failure(format!("{}: {}", e.path, e.error))
    }
}

fn summary(report: &ConnectReport) -> String {
    let mut lines = Vec::new();
    if !report.connected.is_empty() {
        lines.push(format!("Connected: {}", report.connected.join(", ")));
    }
    if !report.deferred.is_empty() {
        lines.push(format!(
            "Connecting (tools from cache): {}",
            report.deferred.join(", ")
        ));
    }
    if !report.pending.is_empty() {
        lines.push(format!("Still connecting: {}", report.pending.join(", ")));
    }
    for (name, e) in &report.errors {
        lines.push(format!("Failed: {name}: {e}"));
    }
    if lines.is_empty() {
        lines.push("No MCP servers to connect.".to_owned());
    }
    lines.join("\n")
}

fn usage(what: &str) -> crate::error::Error {
    crate::error::Error::Config {
        message: format!("usage: /mcp {what}. Type /mcp help for usage."),
    }
}

fn parse_scope(s: &str) -> Result<Level, crate::error::Error> {
    match s {
        "project" => Ok(Level::Project),
        "user" => Ok(Level::User),
        other => Err(usage(&format!("--scope is project or user, not {other:?}"))),
    }
}

/// Splits a command line into words: white space separates, `"..."` and `'...'` quote.
pub(crate) fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"') | (None, '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell_would_for_simple_lines() {
        assert_eq!(
            split_words("/mcp add x -- npx -y pkg"),
            ["/mcp", "add", "x", "--", "npx", "-y", "pkg"]
        );
        assert_eq!(
            split_words(r#"add x --header "Authorization: Bearer t" ''"#),
            ["add", "x", "--header", "Authorization: Bearer t", ""]
        );
        assert!(split_words("   ").is_empty());
    }
}
