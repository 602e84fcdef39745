//! Consent before anything is written or run: a [`Proposal`] is one server config to add, with
//! where it comes from and what to warn about; the host shows its lines (the trust display's,
//! [`approval_lines`]) and the config written is the one shown, approved in the same trust
//! store as a project server. (Making a bundle's proposal asks the runtimes it needs for their
//! version, `node --version`; nothing of the server runs before it is approved.)

use std::path::{Path, PathBuf};

use crate::config::{
    approval_lines, policy_refusal, policy_requires_sandbox, validate_server_config,
    validate_server_name, ConfigWriter, DiscoveryOptions, Level, ServerConfig,
};
use crate::error::Error;
use crate::text::printable;

/// A server to add, for the user to approve before anything is written or run: its name, the
/// config that will be written (and run), where it comes from, and what to warn about.
///
/// [`Proposal::lines`] is what to show: the command line, the environment's and headers'
/// names (never their values), the URL with its secrets masked, the sandbox, as the trust
/// display shows a project server. [`Proposal::add`] asks the host's `approve` with exactly
/// that, and writes it only on a yes: what is shown is what is written, and what runs.
///
/// ```
/// use mcp_runtime::config::{DiscoveryOptions, Level, ServerConfig};
/// use mcp_runtime::install::Proposal;
///
/// # let dir = std::env::temp_dir().join(format!("proposal-doc-{}", std::process::id()));
/// # let options = DiscoveryOptions { home: Some(dir.join("home")), policy_file: Some(dir.join("none.json")), ..Default::default() };
/// let config = ServerConfig::stdio("npx", ["-y", "@example/weather-mcp@1.2.0"]);
/// let proposal = Proposal::new("weather", config)?;
/// assert_eq!(proposal.lines(), ["command: npx -y @example/weather-mcp@1.2.0"]);
/// let written = proposal.add(&dir, &options, Level::User, |shown| {
///     for line in shown.lines() {
///         println!("    {line}");
///     }
///     true // the user said yes to what was shown
/// })?;
/// assert!(written.is_some());
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), mcp_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Proposal {
    name: String,
    config: ServerConfig,
    from: Option<String>,
    warnings: Vec<String>,
    /// A bundle to unpack once approved, before the config is written.
    #[cfg(feature = "mcpb")]
    unpack: Option<std::sync::Arc<super::bundle::Unpack>>,
}

impl Proposal {
    /// A proposal to add `config` as the server `name`. An invalid name, or a config discovery
    /// would refuse, is [`Error::Config`].
    pub fn new(name: impl Into<String>, config: ServerConfig) -> Result<Proposal, Error> {
        let name = name.into();
        validate_server_name(&name)?;
        let problems = validate_server_config(&name, &config);
        if !problems.is_empty() {
            return Err(Error::Config {
                message: problems.join("; "),
            });
        }
        Ok(Proposal {
            name,
            config,
            from: None,
            warnings: Vec::new(),
            #[cfg(feature = "mcpb")]
            unpack: None,
        })
    }

    /// The same under another name (an invalid one is [`Error::Config`]).
    pub fn with_name(self, name: impl Into<String>) -> Result<Proposal, Error> {
        let name = name.into();
        validate_server_name(&name)?;
        Ok(Proposal { name, ..self })
    }

    /// Says where it comes from (the first of its lines).
    pub(crate) fn from(mut self, from: String, warnings: Vec<String>) -> Proposal {
        self.from = Some(from);
        self.warnings = warnings;
        self
    }

    /// Unpacks a bundle once approved (before the config that runs it is written).
    #[cfg(feature = "mcpb")]
    pub(crate) fn unpacking(mut self, unpack: std::sync::Arc<super::bundle::Unpack>) -> Proposal {
        self.unpack = Some(unpack);
        self
    }

    /// The name it is added under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The config that is written, and runs.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// What to warn the user of before they approve (a deprecated registry entry).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What to show: where it comes from (`from: ...`), then what runs, as the trust display
    /// shows a project server ([`approval_lines`]): `command: ...`, `env: NAMES (values not
    /// shown)`, `http: URL`, `headers: NAMES (values not shown)`, `sandbox: ...`.
    ///
    /// Every control character of them (an escape sequence a publisher wrote into a name or
    /// an argument, a newline) is shown escaped, so that nothing redraws the display.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.from.iter().map(|f| format!("from: {f}")).collect();
        lines.extend(approval_lines(&self.config));
        lines.iter().map(|l| printable(l)).collect()
    }

    /// Whether it may be run in the operating system's sandbox ([`Proposal::sandboxed`]), or
    /// why not: only a stdio server can, and only where this system can confine one.
    pub fn sandbox_offered(&self) -> Result<(), String> {
        if self.config.command.is_none() {
            return Err("only a stdio server runs in the sandbox".into());
        }
        match crate::transport::sandbox::unavailable() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The same, run in the operating system's sandbox (`sandboxEnabled`), with `rules` (the
    /// config's `sandbox` object: `filesystem.allowWrite`, `network.allowedDomains`, ...) or,
    /// without, the strictest: it writes only its temporary directory and reaches no network.
    /// A package its runtime fetches at start (npx, uvx, ...) needs that runtime's registry
    /// reachable, or the package installed beforehand: say so to the user. A server that is
    /// not stdio, or rules the sandbox cannot read, are [`Error::Config`].
    pub fn sandboxed(mut self, rules: Option<serde_json::Value>) -> Result<Proposal, Error> {
        if self.config.command.is_none() {
            return Err(Error::Config {
                message: format!("{}: only a stdio server runs in the sandbox", self.name),
            });
        }
        self.config.sandbox_enabled = Some(true);
        if rules.is_some() {
            self.config.sandbox = rules;
        }
        let problems = validate_server_config(&self.name, &self.config);
        if !problems.is_empty() {
            return Err(Error::Config {
                message: problems.join("; "),
            });
        }
        Ok(self)
    }

    /// Asks `approve` about exactly this proposal and, on a yes, writes it to the host's file
    /// of `scope` (`<cwd>/.mcp-runtime/mcp.json` or the user's `~/.mcp-runtime/mcp.json`);
    /// returns the file written, or `None` when `approve` said no (nothing is written).
    ///
    /// A project server written here is approved in the user's trust store for exactly this
    /// config, as `/mcp add` approves what it writes: the user approved it here. Before
    /// anything is asked, the administrator's policy is applied: a server it refuses is
    /// [`Error::Config`], and one it runs in the sandbox is shown (and written) sandboxed. A
    /// name already in that file is [`Error::Config`] too.
    pub fn add(
        &self,
        cwd: &Path,
        options: &DiscoveryOptions,
        scope: Level,
        approve: impl FnOnce(&Proposal) -> bool,
    ) -> Result<Option<PathBuf>, Error> {
        if let Some(why) = policy_refusal(options, &self.name, &self.config) {
            return Err(Error::Config {
                message: format!("{} cannot be added: {why}", self.name),
            });
        }
        let shown = if self.config.command.is_some()
            && policy_requires_sandbox(options, &self.name, &self.config)
        {
            self.clone().sandboxed(None)?
        } else {
            self.clone()
        };
        let writer = ConfigWriter::new(cwd, options);
        let path = writer.path(scope).to_path_buf();
        if already_in(&path, &shown.name) {
            return Err(Error::Config {
                message: format!(
                    "a server named {:?} already exists in {}",
                    shown.name,
                    path.display()
                ),
            });
        }
        if !approve(&shown) {
            return Ok(None);
        }
        #[cfg(feature = "mcpb")]
        if let Some(unpack) = &shown.unpack {
            unpack.run()?;
        }
        writer.add(scope, &shown.name, &shown.config)?;
        if scope == Level::Project {
            options
                .trust_store(cwd)
                .approve(cwd, &shown.name, &shown.config, &path)?;
        }
        Ok(Some(path))
    }
}

/// Whether the host file at `path` already has a server `name` (asked before the user is,
/// so that nobody approves what cannot be written; the writer checks again).
fn already_in(path: &Path, name: &str) -> bool {
    crate::config::read_mcp_json(path)
        .map(|servers| servers.contains_key(name))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A project and a home of the test's own, and no system policy.
    fn place(name: &str) -> (PathBuf, DiscoveryOptions) {
        let root = std::env::temp_dir().join(format!("mcp-consent-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("project")).unwrap();
        let options = DiscoveryOptions {
            home: Some(root.join("home")),
            policy_file: Some(root.join("policy.json")),
            ..DiscoveryOptions::default()
        };
        (root, options)
    }

    fn npx() -> ServerConfig {
        ServerConfig::stdio("npx", ["-y", "@example/weather-mcp@1.2.0"])
    }

    #[test]
    fn nothing_is_written_without_a_yes_and_a_yes_writes_what_was_shown() {
        let (root, options) = place("yes");
        let project = root.join("project");
        let mut config = npx();
        config.env.insert("KEY".into(), "${KEY}".into());
        let proposal = Proposal::new("weather", config).unwrap();
        assert_eq!(
            proposal.lines(),
            [
                "command: npx -y @example/weather-mcp@1.2.0",
                "env: KEY (values not shown)"
            ]
        );
        let asked = Cell::new(0);
        let no = proposal.add(&project, &options, Level::Project, |shown| {
            asked.set(asked.get() + 1);
            assert_eq!(shown.lines(), proposal.lines());
            false
        });
        assert_eq!(no.unwrap(), None);
        assert_eq!(asked.get(), 1);
        let file = project.join(".mcp-runtime/mcp.json");
        assert!(!file.exists());

        let written = proposal
            .add(&project, &options, Level::Project, |_| true)
            .unwrap();
        assert_eq!(written.as_deref(), Some(file.as_path()));
        let servers = crate::config::read_mcp_json(&file).unwrap();
        let back = servers["weather"].as_ref().unwrap();
        assert_eq!(approval_lines(back), approval_lines(proposal.config()));
        // Approved for exactly that config, in the trust store project servers use.
        let store = options.trust_store(&project);
        let approvals = store.approvals(&project);
        assert_eq!(approvals["weather"].hash, crate::config::config_hash(back));
        // A name already there is refused before anyone is asked.
        let again = proposal.add(&project, &options, Level::Project, |_| panic!("asked"));
        assert!(
            matches!(again, Err(Error::Config { message }) if message.contains("already exists"))
        );
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn the_policy_is_applied_before_anyone_is_asked() {
        let (root, options) = place("policy");
        let project = root.join("project");
        let policy = options.policy_file.clone().unwrap();
        std::fs::write(
            &policy,
            r#"{"deniedMcpServers": [{"serverName": "weather"}]}"#,
        )
        .unwrap();
        let proposal = Proposal::new("weather", npx()).unwrap();
        let refused = proposal.add(&project, &options, Level::User, |_| panic!("asked"));
        assert!(
            matches!(refused, Err(Error::Config { message }) if message.contains("cannot be added"))
        );

        // A policy that sandboxes every stdio server: shown, and written, sandboxed.
        std::fs::write(&policy, r#"{"requireSandbox": true}"#).unwrap();
        let mut shown_lines = Vec::new();
        proposal
            .add(&project, &options, Level::User, |shown| {
                shown_lines = shown.lines();
                true
            })
            .unwrap();
        assert!(
            shown_lines.iter().any(|l| l.starts_with("sandbox: on")),
            "{shown_lines:?}"
        );
        let file = root.join("home/.mcp-runtime/mcp.json");
        let servers = crate::config::read_mcp_json(&file).unwrap();
        assert_eq!(
            servers["weather"].as_ref().unwrap().sandbox_enabled,
            Some(true)
        );
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        let config = ServerConfig::stdio("npx", ["-y", "pkg\u{1b}[2K\rcommand: safe", "a\nb"]);
        let lines = Proposal::new("x", config).unwrap().lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(!lines[0].chars().any(char::is_control), "{lines:?}");
        assert!(lines[0].contains("\\u{1b}[2K\\r"), "{lines:?}");
    }

    #[test]
    fn only_a_stdio_server_is_sandboxed_and_its_rules_are_checked() {
        let sandboxed = Proposal::new("weather", npx())
            .unwrap()
            .sandboxed(Some(
                serde_json::json!({"network": {"allowedDomains": ["*.example.com"]}}),
            ))
            .unwrap();
        assert_eq!(sandboxed.config().sandbox_enabled, Some(true));
        assert!(sandboxed
            .lines()
            .iter()
            .any(|l| l.contains("*.example.com")));
        let bad = Proposal::new("weather", npx())
            .unwrap()
            .sandboxed(Some(serde_json::json!({"network": {"allowed": []}})));
        assert!(matches!(bad, Err(Error::Config { .. })));
        let remote = Proposal::new(
            "weather",
            ServerConfig {
                url: Some("https://a.example/mcp".into()),
                ..ServerConfig::default()
            },
        )
        .unwrap();
        assert!(remote.sandbox_offered().is_err());
        assert!(matches!(remote.sandboxed(None), Err(Error::Config { .. })));
        assert!(Proposal::new("bad name", npx()).is_err());
    }
}
