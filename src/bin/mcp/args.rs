//! Command-line parsing, by hand: the contract is small and stable.

use std::path::PathBuf;

pub const USAGE: &str = "\
mcp: use MCP servers from the command line

usage: mcp [--config FILE] [--cwd DIR] [--server NAME]... [--json] [--timeout MS]
           [--cache-dir DIR] [--no-cache] [--no-wait] [--trust-project] [--no-project-config]
           [-v]... [COMMAND] [--url URL | -- SERVER_COMMAND ARGS...]

commands:
  (none)                 demo: starts two embedded demo servers (one fast, one slow) and shows
                         discovery, the 250 ms gate, deferred tools from the cache, a call, a
                         reload and a clean shutdown
  tools [--tokens]       list every exposed tool (--json: with input and output schemas,
                         annotations and definitionTokens); --tokens: what each definition
                         costs in a model's context (estimated), per server and in total
  search [--limit N] QUERY...
                         the tools that best answer QUERY (what a tool should do, a tool's
                         name, or select:NAME[,NAME...]), best first, N at most (default 5),
                         ranked as a host's tool search ranks them (--json: with input
                         schemas)
  call [--full] TOOL [ARGS_JSON | KEY=VALUE...]
                         call a tool by its exposed name (mcp_<server>_<tool>); KEY=VALUE
                         arguments are typed by the tool's schema (a=2 is a number where the
                         schema says number, a string where it says string). Only the server
                         that owns the tool is started (known from the tool cache, else from
                         the name's mcp_<server>_ prefix); progress shows on a terminal, and
                         there a result is cut at about 25,000 tokens, as a model would be
                         shown it (--full: all of it; piped, it is always whole)
  skills                 every server's skills (the skills extension), from their lists: no
                         skill file is read
  skill NAME [FILE...]   load a skill (NAME, or SERVER/NAME): its SKILL.md is read and checked
                         against the list (size, SHA-256 digest, frontmatter) and printed,
                         then each FILE (relative to the skill, e.g. references/FORMS.md),
                         each checked; a file that fails its check stops it (exit 65)
  app [--no-open] TOOL [ARGS_JSON | KEY=VALUE...]
                         show a tool's App (MCP Apps): calls the tool, serves a page on
                         127.0.0.1 that renders the App in a sandboxed frame bridged to its
                         server, and opens the browser (--no-open: prints the URL only); the
                         App's messages are printed; runs until the App closes, its page is
                         gone, or Ctrl-C
  resources              every server's resources
  read URI               read a resource (from the server that lists it, or --server NAME)
  templates              every server's resource templates
  prompts                every server's prompts, by command name (mcp_<server>_<prompt>)
  prompt NAME [ARGS_JSON | KEY=VALUE...]
                         get a prompt by its command name, with its arguments filled in
  complete REF ARG [VALUE]
                         completion values for a prompt's argument (REF: the prompt's command
                         name) or a resource template's variable (REF: the template)
  logs [--level L]       follow the servers' log messages until interrupted (L: debug, info,
                         notice, warning, error, critical, alert, emergency; asks each server
                         for that level and shows nothing below it)
  info NAME              a server's identity, protocol, transport, capabilities, instructions
  status                 every server: status, error, source, the transport actually used
  servers                discovered server configs with their sources, trust state and why
                         each one is skipped (connects nothing, resolves nothing)
  trust NAME... | --all  approve project servers that wait for approval, after showing what
                         each runs (on a terminal, asks first); remembered for their
                         current config in ~/.mcp-runtime/trusted.json; a changed config
                         asks again, saying what changed
  untrust NAME           forget a project server's approval
  login NAME [--headless | --no-browser]
                         log in to a remote server (OAuth): opens the browser ($BROWSER, else
                         the system's) at its authorization page and receives the answer on
                         127.0.0.1; --no-browser prints the URL instead and also takes the
                         address the browser ends on, pasted on stdin (a browser on another
                         machine, over SSH); --headless follows the authorization URL itself
                         (servers that approve without a user, CI). Tokens are kept in
                         ~/.mcp-runtime/auth.json (0600)
  logout NAME            forget a server's OAuth tokens
  auth status            what is stored for every server that uses OAuth
  probe [--header K:V]... [--oauth JSON] [--call-all] [--ca-file FILE] TARGET
                         headless check of one server; TARGET is a URL (the last argument) or
                         `-- command args...` for stdio: connect, answer server requests
                         unattended, call every tool with arguments from its schema, except
                         tools that say they write (destructiveHint: true, readOnlyHint:
                         false; reported as skipped) unless --call-all (a tool with no
                         annotations is called); roots/list is answered with an empty temporary directory
                         (removed afterwards), never the current one; --oauth JSON (an
                         `oauth` object, `{}` to register) logs in headlessly on a 401
  help [COMMAND]         this text, or one command's (also `mcp COMMAND --help`)
  completions SHELL      a completion script for bash, zsh or fish, e.g.
                         `mcp completions bash > ~/.local/share/bash-completion/completions/mcp`
  repl                   read lines from stdin: `/mcp <sub> ...`, `tools`, `call TOOL
                         [JSON | KEY=VALUE...]`, `status` (as the command: each server's
                         outcome first), `quit`; prints each answer. With --config, the /mcp
                         commands that edit config files (add, remove, enable, disable) are
                         refused: edit FILE and /mcp reload

options:
  --config FILE  a .mcp.json-shaped file ({\"mcpServers\": {...}}) instead of discovery
  --cwd DIR      the project directory (default: the current directory); without --config,
                 servers are discovered from it and from the home directory (the host's
                 .mcp-runtime/mcp.json, Claude Code, Claude Desktop, Codex, Gemini CLI,
                 Cursor, Windsurf, VS Code, Zed, opencode, Goose, Cline, Roo Code,
                 Continue, Amazon Q, Junie, mcp.json); project-level servers need approval
  --server NAME  only this server (repeatable): every command starts only the named ones
  --url URL      a server given on the command line instead of a config: Streamable HTTP,
                 falling back to legacy SSE (with --header K:V, repeatable); or, last,
                 `-- COMMAND ARGS...` for a stdio server (with --env K=V, repeatable). It is
                 named after what it runs (`-- npx -y @scope/server-files` is server-files);
                 its tools answer to their own names too
  --header K:V   a header for --url (and for probe's URL)
  --ca-file FILE  a PEM file of CAs to trust for --url (and probe's URL), beside the
                 system's store
  --client-cert FILE  a client certificate (PEM: the certificate, then its chain) for
                 --url (and probe's URL), with --client-key
  --client-key FILE  the client certificate's unencrypted PEM key
  --env K=V      an environment value for the `-- COMMAND` server
  --json         machine-readable output
  --timeout MS   bounds each wait on a server: its connect (start, protocol probe,
                 initialize) and then each request, the first tools/list included
                 (default: 30000 to connect, 60000 per request; probe's calls 30000)
  --cache-dir DIR  where tool definitions are cached (default: the user's cache directory,
                 e.g. ~/.cache/mcp-runtime)
  --no-cache     no tool cache (servers still connecting after the gate are waited for)
  --no-wait      do not wait for servers still connecting after the gate with nothing cached
  --trust-project  start this project's servers for this run without approval (nothing
                 is remembered); without it, a project-level server (from a file inside
                 the project) starts only once approved with `mcp trust`
  --no-project-config  ignore project-level config files entirely
  -v             more logging on stderr (-v info, -vv debug, -vvv trace); RUST_LOG works too
  -h, --help     this text (after a command: that command's)
  -V, --version  the version

server requests: roots/list is answered with the project directory; elicitation asks on the
terminal (or, without one, accepts the schema's defaults when they cover every required
field, and declines otherwise); sampling is not offered (the CLI has no model)

exit status: 0 done; 1 the tool reported an error of its own (isError), or one of probe's
calls failed; 2 bad usage (a missing tool included, with
the nearest names) or a config with nothing to do; 69 the server could not be started or
reached, or went away; 76 the server answered with an error or broke the protocol; 77 the
server needs a login; 124 no answer within the timeout; 74 the output could not be written
(one line on stderr); 141 the output was closed by its reader (a pipe: quietly); 130, 143, 129
on SIGINT, SIGTERM, SIGHUP. When every server failed, `tools` exits with the first failure's
status. Every server is closed first, in each case. With --json, a call
that failed prints {\"error\": {\"kind\": ..., \"message\": ...}} (kind: unavailable, protocol,
authorization, timeout, usage), never a tool result; a call is by the tool's exposed name, or
by its own name where one server has it
";

/// The line shown with a usage error (the whole text is `--help`).
pub const SHORT_USAGE: &str = "usage: mcp [OPTIONS] [COMMAND] (see mcp --help)";

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Demo,
    /// `help COMMAND`, `COMMAND --help`.
    HelpFor(&'static str),
    /// `completions SHELL`.
    Completions(crate::help::Shell),
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
    Version,
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
    Help,
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
pub fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args {
        config: None,
        cwd: None,
        json: false,
        timeout_ms: None,
        cache_dir: None,
        no_cache: false,
        no_wait: false,
        verbosity: 0,
        call_all: false,
        tokens: false,
        full: false,
        limit: None,
        no_open: false,
        trust_project: false,
        no_project_config: false,
        servers: Vec::new(),
        level: None,
        target: None,
        command: Command::Demo,
    };
    let mut url: Option<String> = None;
    let mut env: Vec<(String, String)> = Vec::new();
    let mut rest: Vec<String> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut tls = crate::target::UrlTls::default();
    let mut oauth: Option<String> = None;
    let mut command: Option<Vec<String>> = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            command = Some(it.by_ref().cloned().collect());
            break;
        }
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match a.as_str() {
            "--config" => args.config = Some(value("--config")?.into()),
            "--cwd" => args.cwd = Some(value("--cwd")?.into()),
            "--json" => args.json = true,
            "--cache-dir" => args.cache_dir = Some(value("--cache-dir")?.into()),
            "--no-cache" => args.no_cache = true,
            "--no-wait" => args.no_wait = true,
            "--call-all" => args.call_all = true,
            "--tokens" => args.tokens = true,
            "--full" => args.full = true,
            "--no-open" => args.no_open = true,
            "--limit" => {
                let v = value("--limit")?;
                args.limit = Some(
                    v.parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("--limit takes a number of tools, not {v:?}"))?,
                );
            }
            "--trust-project" => args.trust_project = true,
            "--no-project-config" => args.no_project_config = true,
            "--all" if rest.first().map(String::as_str) == Some("trust") => rest.push(a.clone()),
            "--timeout" => {
                let v = value("--timeout")?;
                args.timeout_ms = Some(
                    v.parse()
                        .map_err(|_| format!("--timeout takes milliseconds, not {v:?}"))?,
                );
            }
            "-h" | "--help" => args.command = Command::Help,
            "-V" | "--version" => args.command = Command::Version,
            "--server" => args.servers.push(value("--server")?),
            "--level" => args.level = Some(value("--level")?),
            "--oauth" => oauth = Some(value("--oauth")?),
            "--url" => url = Some(value("--url")?),
            flag @ ("--ca-file" | "--client-cert" | "--client-key") => {
                let file = value(flag)?;
                tls.set(flag, file);
            }
            "--env" => {
                let v = value("--env")?;
                let (k, v) = v
                    .split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .ok_or_else(|| format!("--env takes K=V, not {v:?}"))?;
                env.push((k.to_owned(), v.to_owned()));
            }
            "--header" => {
                let v = value("--header")?;
                let (k, v) = v
                    .split_once(':')
                    .ok_or_else(|| format!("--header takes K:V, not {v:?}"))?;
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
            v if v.starts_with("-v") && v[1..].chars().all(|c| c == 'v') => {
                args.verbosity += v.len() - 1
            }
            flag if flag.starts_with("--") && rest.is_empty() => {
                return Err(format!("unknown option {flag}"))
            }
            _ => rest.push(a.clone()),
        }
    }
    if args.command == Command::Help {
        // `mcp COMMAND --help`: that command's help.
        if let Some(word) = rest.first() {
            args.command = Command::HelpFor(crate::help::known(word)?);
        }
        return Ok(args);
    }
    if args.command == Command::Version {
        return Ok(args);
    }
    let mut words = rest.into_iter();
    args.command = match words.next().as_deref() {
        None => Command::Demo,
        Some("tools") => Command::Tools,
        Some("search") => {
            let query: Vec<String> = words.by_ref().collect();
            if query.iter().all(|w| w.trim().is_empty()) {
                return Err("search needs a QUERY".into());
            }
            Command::Search(query.join(" "))
        }
        Some("help") => match words.next() {
            None => Command::Help,
            Some(word) => Command::HelpFor(crate::help::known(&word)?),
        },
        Some("completions") => {
            let shell = words
                .next()
                .ok_or("completions needs a SHELL: bash, zsh or fish")?;
            Command::Completions(crate::help::shell(&shell)?)
        }
        Some("status") => Command::Status,
        Some("servers") => Command::Servers,
        Some("trust") => {
            let names: Vec<String> = words.by_ref().collect();
            match names.as_slice() {
                [] => return Err("trust needs NAME... or --all".into()),
                [all] if all == "--all" => Command::Trust(Vec::new()),
                names if names.iter().any(|n| n == "--all") => {
                    return Err("trust takes NAME... or --all, not both".into())
                }
                names => Command::Trust(names.to_vec()),
            }
        }
        Some("untrust") => Command::Untrust(words.next().ok_or("untrust needs a NAME")?),
        Some("login") => {
            let name = words.next().ok_or("login needs a NAME")?;
            let rest: Vec<String> = words.by_ref().collect();
            let how = match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] => crate::auth::LoginHow::Browser,
                ["--headless"] => crate::auth::LoginHow::Headless,
                ["--no-browser"] => crate::auth::LoginHow::Pasted,
                _ => {
                    return Err(format!(
                        "login takes NAME [--headless | --no-browser], not {:?}",
                        rest.join(" ")
                    ))
                }
            };
            Command::Login { name, how }
        }
        Some("logout") => Command::Logout(words.next().ok_or("logout needs a NAME")?),
        Some("auth") => match words.next().as_deref() {
            Some("status") => Command::AuthStatus,
            _ => return Err("usage: mcp auth status".into()),
        },
        Some("repl") => Command::Repl,
        Some("probe") => {
            let target = match (command.take(), words.next()) {
                (Some(argv), None) if !argv.is_empty() => crate::probe::Target::Command(argv),
                (None, Some(url)) => crate::probe::Target::Url {
                    url,
                    headers: std::mem::take(&mut headers),
                    tls: std::mem::take(&mut tls),
                    oauth: match oauth.take() {
                        Some(text) => Some(
                            serde_json::from_str(&text)
                                .map_err(|e| format!("--oauth takes a JSON object: {e}"))?,
                        ),
                        None => None,
                    },
                },
                _ => return Err("probe needs a URL or `-- command args...`".into()),
            };
            Command::Probe(target)
        }
        Some("call") => {
            let tool = words.next().ok_or("call needs a TOOL")?;
            Command::Call {
                tool,
                args: words.by_ref().collect(),
            }
        }
        Some("app") => {
            let tool = words.next().ok_or("app needs a TOOL")?;
            Command::App {
                tool,
                args: words.by_ref().collect(),
            }
        }
        Some("skills") => Command::Skills,
        Some("skill") => Command::Skill {
            name: words.next().ok_or("skill needs a NAME")?,
            files: words.by_ref().collect(),
        },
        Some("resources") => Command::Resources,
        Some("read") => Command::Read(words.next().ok_or("read needs a URI")?),
        Some("templates") => Command::Templates,
        Some("prompts") => Command::Prompts,
        Some("prompt") => {
            let name = words.next().ok_or("prompt needs a NAME")?;
            Command::Prompt {
                name,
                args: words.by_ref().collect(),
            }
        }
        Some("complete") => {
            let reference = words.next().ok_or("complete needs REF ARG [VALUE]")?;
            let argument = words.next().ok_or("complete needs REF ARG [VALUE]")?;
            Command::Complete {
                reference,
                argument,
                value: words.next().unwrap_or_default(),
            }
        }
        Some("logs") => Command::Logs,
        Some("info") => Command::Info(words.next().unwrap_or_default()),
        Some(other) => return Err(format!("unknown command {other:?}")),
    };
    if let Some(extra) = words.next() {
        return Err(format!("unexpected argument {extra:?}"));
    }
    if command.is_some() || url.is_some() {
        if !matches!(
            args.command,
            Command::Tools
                | Command::Search(_)
                | Command::Skills
                | Command::Skill { .. }
                | Command::Call { .. }
                | Command::App { .. }
                | Command::Resources
                | Command::Read(_)
                | Command::Templates
                | Command::Prompts
                | Command::Prompt { .. }
                | Command::Complete { .. }
                | Command::Logs
                | Command::Info(_)
                | Command::Status
        ) {
            return Err("a server on the command line (`-- COMMAND...` or --url) goes with the commands that use servers (probe takes its own)".into());
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
        return Err("--env goes with a server command (`-- COMMAND ARGS...`)".into());
    }
    if args.command == Command::Info(String::new()) {
        return Err("info needs a server NAME".into());
    }
    if args.level.is_some() && args.command != Command::Logs {
        return Err("--level goes with logs".into());
    }
    if args.tokens && args.command != Command::Tools {
        return Err("--tokens goes with tools".into());
    }
    if args.full && !matches!(args.command, Command::Call { .. }) {
        return Err("--full goes with call".into());
    }
    if args.no_open && !matches!(args.command, Command::App { .. }) {
        return Err("--no-open goes with app".into());
    }
    if args.limit.is_some() && !matches!(args.command, Command::Search(_)) {
        return Err("--limit goes with search".into());
    }
    if !args.servers.is_empty()
        && matches!(
            args.command,
            Command::Probe(_) | Command::Demo | Command::Trust(_) | Command::Untrust(_)
        )
    {
        return Err("--server goes with the commands that start servers".into());
    }
    if args.call_all && !matches!(args.command, Command::Probe(_)) {
        return Err("--call-all goes with probe".into());
    }
    Ok(args)
}
