//! The command's arguments: clap parses them by the tree in `usage.rs`, and `parse` turns the
//! matches into `Args`, checking what clap's tree cannot say (a server on the command line
//! goes with the commands that use servers; `--header` with a URL; `--env` with a command).

use std::path::PathBuf;

use clap::ArgMatches;

/// Why `parse` returned no `Args`.
#[derive(Debug)]
pub enum Stop {
    /// `--help`, `help [COMMAND]`, `-V`: the text to print on stdout (status 0).
    Show(String),
    /// A usage error, in one line (status 2).
    Usage(String),
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop::Usage(message)
    }
}

impl From<&str> for Stop {
    fn from(message: &str) -> Stop {
        Stop::Usage(message.to_owned())
    }
}

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Demo,
    /// `completions SHELL`.
    Completions(clap_complete::Shell),
    Tools,
    Call {
        tool: String,
        args: Vec<String>,
    },
    /// `app TOOL [ARGS...]`.
    App {
        tool: String,
        args: Vec<String>,
    },
    Resources,
    Read(String),
    Templates,
    Prompts,
    Prompt {
        name: String,
        args: Vec<String>,
    },
    Complete {
        reference: String,
        argument: String,
        value: String,
    },
    Logs,
    /// `search QUERY...`, the words joined.
    Search(String),
    /// `skills`.
    Skills,
    /// `skill NAME [FILE...]`.
    Skill {
        name: String,
        files: Vec<String>,
    },
    Info(String),
    Status,
    Servers,
    Trust(Vec<String>),
    Untrust(String),
    Login {
        name: String,
        how: crate::auth::LoginHow,
    },
    Logout(String),
    AuthStatus,
    Repl,
    Probe(crate::probe::Target),
    /// `registry search QUERY... [--cursor C] [--registry URL]`.
    RegistrySearch {
        query: String,
        cursor: Option<String>,
        registry: Option<String>,
    },
    /// `registry show NAME[@VERSION] [--registry URL]`.
    RegistryShow {
        what: String,
        registry: Option<String>,
    },
    /// `add NAME[@VERSION] ...`.
    Add(AddRequest),
}

/// `add`'s request.
#[derive(Debug, Clone, PartialEq)]
pub struct AddRequest {
    /// `NAME` or `NAME@VERSION` in the registry.
    pub what: String,
    /// `--way N`.
    pub way: Option<usize>,
    /// `--as NAME`: the name it is added under.
    pub name: Option<String>,
    /// `--set KEY=VALUE`, in order.
    pub sets: Vec<(String, String)>,
    /// `--yes`: add what is shown without asking.
    pub yes: bool,
    /// `--scope project|user`.
    pub scope: mcp_runtime::config::Level,
    /// `--registry URL`.
    pub registry: Option<String>,
    /// `--sha256 HEX`: the digest a bundle must have.
    pub sha256: Option<String>,
    /// `--sandbox` and its rules.
    pub sandbox: Option<crate::target::SandboxFlags>,
}

/// Parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub config: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
    pub json: bool,
    pub timeout_ms: Option<u64>,
    pub cache_dir: Option<PathBuf>,
    pub no_cache: bool,
    pub no_wait: bool,
    pub verbosity: usize,
    pub call_all: bool,
    /// `tools --tokens`.
    pub tokens: bool,
    /// `call --full`: the whole result on a terminal too.
    pub full: bool,
    /// `search --limit N`.
    pub limit: Option<usize>,
    /// `app --no-open`.
    pub no_open: bool,
    pub trust_project: bool,
    pub no_project_config: bool,
    /// `--server NAME`...: only these servers.
    pub servers: Vec<String>,
    /// `logs --level L`.
    pub level: Option<String>,
    /// A server given on the command line (`-- COMMAND ARGS...` or `--url URL`), with its name.
    pub target: Option<(String, mcp_runtime::config::ServerConfig)>,
    pub command: Command,
}

/// Parses `argv` (without the program name).
pub fn parse(argv: &[String]) -> Result<Args, Stop> {
    let parsed = |argv: &[String]| {
        crate::usage::command()
            .try_get_matches_from(std::iter::once("mcp".to_owned()).chain(argv.iter().cloned()))
    };
    let matches = match parsed(argv) {
        Ok(matches) => matches,
        // `help WORD` with a word that is no command: clap's answer to `WORD` names the near
        // command, where `help`'s does not.
        Err(e)
            if argv.len() == 2
                && argv[0] == "help"
                && e.kind() == clap::error::ErrorKind::InvalidSubcommand =>
        {
            return Err(parsed(&argv[1..]).map_or_else(clap_stop, |_| clap_stop(e)))
        }
        Err(e) => return Err(clap_stop(e)),
    };
    let text = |m: &ArgMatches, id: &str| m.get_one::<String>(id).cloned();
    let texts = |m: &ArgMatches, id: &str| -> Vec<String> {
        m.get_many::<String>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let flag = |m: &ArgMatches, id: &str| m.get_flag(id);
    let mut args = Args {
        config: text(&matches, "config").map(PathBuf::from),
        cwd: text(&matches, "cwd").map(PathBuf::from),
        json: flag(&matches, "json"),
        timeout_ms: matches.get_one::<u64>("timeout").copied(),
        cache_dir: text(&matches, "cache-dir").map(PathBuf::from),
        no_cache: flag(&matches, "no-cache"),
        no_wait: flag(&matches, "no-wait"),
        verbosity: usize::from(matches.get_count("verbose")),
        call_all: false,
        tokens: false,
        full: false,
        limit: None,
        no_open: false,
        trust_project: flag(&matches, "trust-project"),
        no_project_config: flag(&matches, "no-project-config"),
        servers: texts(&matches, "server"),
        level: None,
        target: None,
        command: Command::Demo,
    };
    let mut url = text(&matches, "url");
    let mut env = Vec::new();
    for pair in texts(&matches, "env") {
        let (k, v) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| format!("--env takes K=V, not {pair:?}"))?;
        env.push((k.to_owned(), v.to_owned()));
    }
    let mut sandbox = crate::target::SandboxFlags::read(
        flag(&matches, "sandbox"),
        texts(&matches, "allow-write"),
        texts(&matches, "deny-read"),
        texts(&matches, "allow-domain"),
    );
    let mut headers = Vec::new();
    for pair in texts(&matches, "header") {
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| format!("--header takes K:V, not {pair:?}"))?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let mut tls = crate::target::UrlTls::default();
    for flag in ["ca-file", "client-cert", "client-key"] {
        if let Some(file) = text(&matches, flag) {
            tls.set(&format!("--{flag}"), file);
        }
    }
    let mut command: Option<Vec<String>> = None;
    if let Some((name, m)) = matches.subcommand() {
        if m.try_contains_id("server_command").unwrap_or(false) {
            command = m
                .get_many::<String>("server_command")
                .map(|v| v.cloned().collect());
        }
        let one = |id: &str| text(m, id).unwrap_or_default();
        args.command = match name {
            "tools" => {
                args.tokens = flag(m, "tokens");
                Command::Tools
            }
            "search" => {
                let query = texts(m, "query");
                if query.iter().all(|w| w.trim().is_empty()) {
                    return Err("search needs a QUERY".into());
                }
                args.limit = m.get_one::<usize>("limit").copied();
                Command::Search(query.join(" "))
            }
            "call" => {
                args.full = flag(m, "full");
                Command::Call {
                    tool: one("tool"),
                    args: texts(m, "args"),
                }
            }
            "app" => {
                args.no_open = flag(m, "no-open");
                Command::App {
                    tool: one("tool"),
                    args: texts(m, "args"),
                }
            }
            "skills" => Command::Skills,
            "skill" => Command::Skill {
                name: one("name"),
                files: texts(m, "file"),
            },
            "resources" => Command::Resources,
            "read" => Command::Read(one("uri")),
            "templates" => Command::Templates,
            "prompts" => Command::Prompts,
            "prompt" => Command::Prompt {
                name: one("name"),
                args: texts(m, "args"),
            },
            "complete" => Command::Complete {
                reference: one("ref"),
                argument: one("arg"),
                value: one("value"),
            },
            "logs" => {
                args.level = text(m, "level");
                Command::Logs
            }
            "info" => Command::Info(one("name")),
            "status" => Command::Status,
            "servers" => Command::Servers,
            "trust" => Command::Trust(texts(m, "names")),
            "untrust" => Command::Untrust(one("name")),
            "login" => Command::Login {
                name: one("name"),
                how: if flag(m, "headless") {
                    crate::auth::LoginHow::Headless
                } else if flag(m, "no-browser") {
                    crate::auth::LoginHow::Pasted
                } else {
                    crate::auth::LoginHow::Browser
                },
            },
            "logout" => Command::Logout(one("name")),
            "auth" => Command::AuthStatus,
            "repl" => Command::Repl,
            "registry" => match m.subcommand() {
                Some(("search", s)) => {
                    let query = texts(s, "query").join(" ");
                    if query.trim().is_empty() {
                        return Err("registry search needs a QUERY".into());
                    }
                    Command::RegistrySearch {
                        query,
                        cursor: text(s, "cursor"),
                        registry: text(s, "registry"),
                    }
                }
                Some(("show", s)) => Command::RegistryShow {
                    what: text(s, "name").unwrap_or_default(),
                    registry: text(s, "registry"),
                },
                _ => return Err("registry needs a command: search or show".into()),
            },
            "add" => {
                let mut sets = Vec::new();
                for pair in texts(m, "set") {
                    let (k, v) = pair
                        .split_once('=')
                        .filter(|(k, _)| !k.is_empty())
                        .ok_or_else(|| format!("--set takes KEY=VALUE, not {pair:?}"))?;
                    sets.push((k.to_owned(), v.to_owned()));
                }
                Command::Add(AddRequest {
                    what: one("name"),
                    way: m.get_one::<usize>("way").copied(),
                    name: text(m, "as"),
                    sets,
                    yes: flag(m, "yes"),
                    scope: match text(m, "scope").as_deref() {
                        Some("user") => mcp_runtime::config::Level::User,
                        _ => mcp_runtime::config::Level::Project,
                    },
                    registry: text(m, "registry"),
                    sha256: text(m, "sha256"),
                    sandbox: sandbox.take(),
                })
            }
            "completions" => Command::Completions(
                *m.get_one::<clap_complete::Shell>("shell")
                    .ok_or("completions needs a SHELL")?,
            ),
            "probe" => {
                args.call_all = flag(m, "call-all");
                let target = match (command.take(), text(m, "url").or_else(|| url.take())) {
                    (Some(argv), None) => crate::probe::Target::Command(argv),
                    (None, Some(url)) => crate::probe::Target::Url {
                        url,
                        headers: std::mem::take(&mut headers),
                        tls: std::mem::take(&mut tls),
                        oauth: match text(m, "oauth") {
                            Some(text) => Some(
                                serde_json::from_str(&text)
                                    .map_err(|e| format!("--oauth takes a JSON object: {e}"))?,
                            ),
                            None => None,
                        },
                    },
                    (Some(_), Some(_)) => {
                        return Err(
                            "probe takes a URL or `-- SERVER_COMMAND ARGS...`, not both".into()
                        )
                    }
                    (None, None) => {
                        return Err("probe needs a URL or `-- SERVER_COMMAND ARGS...`".into())
                    }
                };
                Command::Probe(target)
            }
            other => return Err(format!("no command {other:?}").into()),
        };
    }
    if command.is_some() || url.is_some() {
        if matches!(
            args.command,
            Command::Demo
                | Command::Servers
                | Command::Trust(_)
                | Command::Untrust(_)
                | Command::Login { .. }
                | Command::Logout(_)
                | Command::AuthStatus
                | Command::Repl
                | Command::Completions(_)
                | Command::RegistrySearch { .. }
                | Command::RegistryShow { .. }
                | Command::Add(_)
        ) {
            return Err("a server on the command line (`-- SERVER_COMMAND...` or --url) goes with the commands that use servers (probe takes its own)".into());
        }
        if args.config.is_some() {
            return Err(
                "a server on the command line replaces --config: give one or the other".into(),
            );
        }
        let target = crate::target::config(
            command.take(),
            url.take(),
            std::mem::take(&mut headers),
            std::mem::take(&mut env),
            std::mem::take(&mut tls),
            sandbox.take(),
        )?;
        if let Command::Info(name) = &mut args.command {
            if name.is_empty() {
                name.clone_from(&target.0);
            }
        }
        args.target = Some(target);
    }
    if !headers.is_empty() {
        return Err("--header goes with a URL (probe URL, or --url)".into());
    }
    if !tls.is_empty() {
        return Err(
            "--ca-file, --client-cert and --client-key go with a URL (probe URL, or --url)".into(),
        );
    }
    if !env.is_empty() {
        return Err("--env goes with a server command (`-- SERVER_COMMAND ARGS...`)".into());
    }
    if sandbox.is_some() {
        return Err(
            "--sandbox, --allow-write, --deny-read and --allow-domain go with a server command \
             (`-- SERVER_COMMAND ARGS...`) or add; a config's server takes \"sandboxEnabled\""
                .into(),
        );
    }
    if args.command == Command::Info(String::new()) {
        return Err("info needs a server NAME".into());
    }
    if !args.servers.is_empty()
        && matches!(
            args.command,
            Command::Probe(_)
                | Command::Demo
                | Command::Trust(_)
                | Command::Untrust(_)
                | Command::RegistrySearch { .. }
                | Command::RegistryShow { .. }
                | Command::Add(_)
        )
    {
        return Err("--server goes with the commands that start servers".into());
    }
    Ok(args)
}

/// clap's answer as a `Stop`: help and the version to print, or a usage error in one line
/// (clap's message, then its tips: the near name of a misspelt command or option).
fn clap_stop(e: clap::Error) -> Stop {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return Stop::Show(text);
    }
    let mut line = String::new();
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        let l = l.strip_prefix("error: ").unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        if let Some(tip) = l.strip_prefix("tip: ") {
            line.push_str("; ");
            line.push_str(tip);
        } else {
            if !line.is_empty() && !line.ends_with(' ') {
                line.push(' ');
            }
            line.push_str(l);
        }
    }
    Stop::Usage(format!("{line} (see mcp --help)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &str) -> Result<Args, Stop> {
        let argv: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
        parse(&argv)
    }

    fn usage(words: &str) -> String {
        match parse_words(words) {
            Err(Stop::Usage(message)) => message,
            other => panic!("{words}: {other:?}"),
        }
    }

    #[test]
    fn clap_conventions_hold() {
        let a =
            parse_words("-vv --timeout=500 call --full mcp_a_b x=1 -- npx -y srv --flag").unwrap();
        assert_eq!(a.verbosity, 2);
        assert_eq!(a.timeout_ms, Some(500));
        assert!(a.full);
        assert_eq!(
            a.command,
            Command::Call {
                tool: "mcp_a_b".into(),
                args: vec!["x=1".into()]
            }
        );
        let (name, config) = a.target.unwrap();
        assert_eq!(name, "srv");
        assert_eq!(config.args, ["-y", "srv", "--flag"]);
        // Global options after the command.
        let a = parse_words("tools --json --server x").unwrap();
        assert!(a.json && a.servers == ["x"] && a.command == Command::Tools);
        assert_eq!(parse_words("").unwrap().command, Command::Demo);
    }

    #[test]
    fn usage_errors_are_one_line_with_the_near_name() {
        let e = usage("tols");
        assert!(!e.contains('\n') && e.contains("'tools'"), "{e}");
        let e = usage("tools --jsn");
        assert!(e.contains("'--json'"), "{e}");
        assert!(usage("trust a --all").contains("cannot be used with"));
        assert!(usage("trust").contains("required"));
        assert!(usage("servers --url http://x").contains("goes with the commands"));
        assert!(usage("tools --env A=1 --url http://x").contains("--env goes with"));
        assert!(usage("search --limit 0 q").contains("--limit"));
        assert!(usage("login x --headless --no-browser").contains("cannot be used with"));
        assert!(usage("info").contains("info needs a server NAME"));
        assert!(usage("probe").contains("probe needs a URL"));
    }

    #[test]
    fn help_and_version_are_shown() {
        for words in ["--help", "-h", "help", "help call", "call --help", "-V"] {
            assert!(matches!(parse_words(words), Err(Stop::Show(_))), "{words}");
        }
    }
}
