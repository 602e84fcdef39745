//! The command's arguments as a clap command tree: every command, option and help text, from
//! which clap parses (`args::parse`), writes `--help`, `help COMMAND` and `-V`, suggests near
//! misses, and clap_complete writes the completion scripts.

use clap::builder::RangedU64ValueParser;
use clap::{Arg, ArgAction, ArgGroup, Command};

/// The top-level help's first lines.
const TEMPLATE: &str = "\
{name}: {about-with-newline}
{usage-heading} {usage}

{all-args}{after-help}";

/// The top-level help's closing paragraphs.
const AFTER_HELP: &str = "\
A server on the command line, instead of a config: --url URL (Streamable HTTP, falling back
to legacy SSE; with --header K:V) or, last, `-- SERVER_COMMAND ARGS...` (stdio; with --env
K=V), after any command that uses servers. It is named after what it runs (`-- npx -y
@scope/server-files` is server-files); its tools answer to their own names too.

Server requests: roots/list is answered with the project directory; elicitation asks on the
terminal (or, without one, accepts the schema's defaults when they cover every required
field, and declines otherwise); sampling is not offered (the CLI has no model).

Exit status: 0 done; 1 the tool reported an error of its own (isError), or one of probe's
calls failed; 2 bad usage (a missing tool included, with the nearest names) or a config with
nothing to do; 69 the server could not be started (or its sandbox applied) or reached, or
went away; 76 the server answered with an error or broke the protocol; 77 the server needs
a login; 124 no answer within the timeout; 70 an internal error (a panic, caught: a bug); 74
the output could not be written (one line on stderr); 141 the output was closed by its
reader (a pipe: quietly); 130, 143, 129 on SIGINT, SIGTERM, SIGHUP. When every server
failed, `tools` and `status` exit with the first failure's status, and `call` with that of
a server that could not be used. Every server is closed first, in each case. With --json, a
call that failed prints {\"error\": {\"kind\": ..., \"message\": ...}} (kind: unavailable,
sandbox, protocol, authorization, timeout, usage, internal), never a tool result; a call is
by the tool's exposed name, or by its own name where one server has it.

Without a command: the demo. It starts two embedded demo servers (one fast, one slow) and
shows discovery, the 250 ms gate, deferred tools from the cache, a call, a reload and a
clean shutdown.";

/// Each command's closing line.
const SEE_ALL: &str = "Exit statuses and the server on the command line: mcp --help";

/// The whole command tree.
pub fn command() -> Command {
    Command::new("mcp")
        .about("use MCP servers from the command line")
        .version(env!("CARGO_PKG_VERSION"))
        .help_template(TEMPLATE)
        .after_help(AFTER_HELP)
        .subcommand_value_name("COMMAND")
        .args(global_options())
        .subcommands(commands())
}

fn global(arg: Arg) -> Arg {
    arg.global(true)
}

/// The width of an option's help (its column starts at about 28).
const OPTION_WIDTH: usize = 68;
/// The width of a command's description in the list (its column starts at 15).
const COMMAND_WIDTH: usize = 80;

/// `text` in lines of `width` characters at most (clap's own wrapping would follow the
/// terminal's width: the help is the same text everywhere, as its reference, docs/cli.md, quotes it).
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line > 0 && line + 1 + word.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

fn takes(name: &'static str, value: &'static str, help: &'static str) -> Arg {
    global(
        Arg::new(name)
            .long(name)
            .value_name(value)
            .action(ArgAction::Set)
            .help(wrap(help, OPTION_WIDTH)),
    )
}

fn repeated(name: &'static str, value: &'static str, help: &'static str) -> Arg {
    takes(name, value, help).action(ArgAction::Append)
}

fn flag(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .action(ArgAction::SetTrue)
        .help(wrap(help, OPTION_WIDTH))
}

fn global_options() -> Vec<Arg> {
    let options = vec![
        takes(
            "config",
            "FILE",
            "a .mcp.json-shaped file ({\"mcpServers\": {...}}) instead of discovery",
        )
        .value_hint(clap::ValueHint::FilePath),
        takes(
            "cwd",
            "DIR",
            "the project directory (default: the current directory); without --config, \
             servers are discovered from it and from the home directory (the host's \
             .mcp-runtime/mcp.json, Claude Code, Claude Desktop, Codex, Gemini CLI, Cursor, \
             Windsurf, VS Code, Zed, opencode, Goose, Cline, Roo Code, Continue, Amazon Q, \
             Junie, mcp.json); project-level servers need approval",
        )
        .value_hint(clap::ValueHint::DirPath),
        repeated(
            "server",
            "NAME",
            "only this server (repeatable): every command starts only the named ones",
        ),
        global(flag("json", "machine-readable output")),
        takes(
            "timeout",
            "MS",
            "bounds each wait on a server: its connect (start, protocol probe, initialize) \
             and then each request, the first tools/list included (default: 30000 to \
             connect, 60000 per request; probe's calls 30000)",
        )
        .value_parser(clap::value_parser!(u64)),
        takes(
            "cache-dir",
            "DIR",
            "where tool definitions are cached (default: the user's cache directory, e.g. \
             ~/.cache/mcp-runtime)",
        )
        .value_hint(clap::ValueHint::DirPath),
        global(flag(
            "no-cache",
            "no tool cache (servers still connecting after the gate are waited for)",
        )),
        global(flag(
            "no-wait",
            "do not wait for servers still connecting after the gate with nothing cached",
        )),
        global(flag(
            "trust-project",
            "start this project's servers for this run without approval (nothing is \
             remembered); without it, a project-level server (from a file inside the \
             project) starts only once approved with `mcp trust`",
        )),
        global(flag(
            "no-project-config",
            "ignore project-level config files entirely",
        )),
        takes(
            "url",
            "URL",
            "a server given on the command line instead of a config: Streamable HTTP, \
             falling back to legacy SSE",
        )
        .value_hint(clap::ValueHint::Url),
        repeated("header", "K:V", "a header for --url (and for probe's URL)"),
        takes(
            "ca-file",
            "FILE",
            "a PEM file of CAs to trust for --url (and probe's URL), beside the system's \
             store",
        )
        .value_hint(clap::ValueHint::FilePath),
        takes(
            "client-cert",
            "FILE",
            "a client certificate (PEM: the certificate, then its chain) for --url (and \
             probe's URL), with --client-key",
        )
        .value_hint(clap::ValueHint::FilePath),
        takes(
            "client-key",
            "FILE",
            "the client certificate's unencrypted PEM key",
        )
        .value_hint(clap::ValueHint::FilePath),
        repeated(
            "env",
            "K=V",
            "an environment value for the `-- SERVER_COMMAND` server",
        ),
        global(flag(
            "sandbox",
            "run the `-- SERVER_COMMAND` server (or the one `add` adds) in the operating \
             system's sandbox: it reads all but --deny-read, writes only --allow-write and its temporary directory, \
             reaches only --allow-domain (Linux and macOS)",
        )),
        repeated(
            "allow-write",
            "DIR",
            "a directory the sandboxed server may write in (implies --sandbox)",
        )
        .value_hint(clap::ValueHint::DirPath),
        repeated(
            "deny-read",
            "PATH",
            "a file or directory the sandboxed server may not read (implies --sandbox)",
        )
        .value_hint(clap::ValueHint::AnyPath),
        repeated(
            "allow-domain",
            "D",
            "a host the sandboxed server may reach through its proxy, *.example.com for \
             the names under one (implies --sandbox)",
        ),
        global(
            Arg::new("verbose")
                .short('v')
                .action(ArgAction::Count)
                .help(wrap(
                    "more logging on stderr (-v info, -vv debug, -vvv trace); RUST_LOG works \
                     too",
                    OPTION_WIDTH,
                )),
        ),
    ];
    // Listed after a command's own options, in this order, under their own heading.
    options
        .into_iter()
        .enumerate()
        .map(|(i, a)| a.help_heading("Global options").display_order(100 + i))
        .collect()
}

/// The stdio server a command can take last: `-- SERVER_COMMAND ARGS...`.
fn server_command() -> Arg {
    Arg::new("server_command")
        .value_name("SERVER_COMMAND")
        .num_args(1..)
        .last(true)
        .allow_hyphen_values(true)
        .value_hint(clap::ValueHint::CommandWithArguments)
        .help("a stdio server to use instead of a config (with --env K=V)")
}

/// A command's own option that takes a value.
fn option(name: &'static str, value: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .value_name(value)
        .action(ArgAction::Set)
        .help(wrap(help, OPTION_WIDTH))
}

/// `--registry URL`.
fn registry_option() -> Arg {
    option(
        "registry",
        "URL",
        "the registry to ask (default: the official MCP Registry)",
    )
    .value_hint(clap::ValueHint::Url)
}

fn positional(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .value_name(value_name(name))
        .help(wrap(help, OPTION_WIDTH))
}

fn words(name: &'static str, help: &'static str) -> Arg {
    positional(name, help).num_args(1..)
}

/// A positional's name in the usage lines.
fn value_name(id: &str) -> &'static str {
    match id {
        "query" => "QUERY",
        "tool" => "TOOL",
        "args" => "ARGS",
        "name" => "NAME",
        "names" => "NAME",
        "file" => "FILE",
        "uri" => "URI",
        "ref" => "REF",
        "arg" => "ARG",
        "value" => "VALUE",
        "url" => "URL",
        _ => "SHELL",
    }
}

/// A command that starts servers: it can take the server last (added after its own
/// positionals: clap numbers them in the order they are added).
fn using(name: &'static str, about: &'static str) -> Command {
    plain(name, about).before_help(USING)
}

/// The mark `commands` replaces with the server argument.
const USING: &str = "\u{0}";

fn plain(name: &'static str, about: &'static str) -> Command {
    Command::new(name)
        .about(wrap(about, COMMAND_WIDTH))
        .after_help(SEE_ALL)
}

fn commands() -> Vec<Command> {
    let with_server = |c: Command| match c.get_before_help() {
        Some(mark) if mark.to_string() == USING => {
            c.before_help(None::<&str>).arg(server_command())
        }
        _ => c,
    };
    let all = vec![
        using(
            "tools",
            "list every exposed tool (--json: with input and output schemas, annotations and \
             definitionTokens)",
        )
        .arg(flag(
            "tokens",
            "what each definition costs in a model's context (estimated), per server and in \
             total",
        )),
        using(
            "search",
            "the tools that best answer QUERY (what a tool should do, a tool's name, or \
             select:NAME[,NAME...]), best first, ranked as a host's tool search ranks them \
             (--json: with input schemas)",
        )
        .arg(
            Arg::new("limit")
                .long("limit")
                .value_name("N")
                .value_parser(RangedU64ValueParser::<usize>::new().range(1..))
                .help("N tools at most (default 5)"),
        )
        .arg(words("query", "the words of the query").required(true)),
        using(
            "call",
            "call a tool by its exposed name (mcp_<server>_<tool>); KEY=VALUE arguments are \
             typed by the tool's schema (a=2 is a number where the schema says number, a \
             string where it says string). Only the server that owns the tool is started \
             (known from the tool cache, else from the name's mcp_<server>_ prefix); progress \
             shows on a terminal, and there a result is cut at about 25,000 tokens, as a \
             model would be shown it (piped, it is always whole)",
        )
        .arg(flag("full", "all of the result on a terminal too"))
        .arg(positional("tool", "the tool's exposed name").required(true))
        .arg(words("args", "ARGS_JSON, or KEY=VALUE...")),
        using(
            "skills",
            "every server's skills (the skills extension), from their lists: no skill file is \
             read",
        ),
        using(
            "skill",
            "load a skill: its SKILL.md is read and checked against the list (size, SHA-256 \
             digest, frontmatter) and printed, then each FILE, each checked; a file that \
             fails its check stops it (exit 65)",
        )
        .arg(positional("name", "NAME, or SERVER/NAME").required(true))
        .arg(words(
            "file",
            "a file of the skill, relative to it (e.g. references/FORMS.md)",
        )),
        using(
            "app",
            "show a tool's App (MCP Apps): calls the tool, serves a page on 127.0.0.1 that \
             renders the App in a sandboxed frame bridged to its server, and opens the \
             browser; the App's messages are printed; runs until the App closes, its page is \
             gone, or Ctrl-C",
        )
        .arg(flag("no-open", "print the page's URL only"))
        .arg(positional("tool", "the tool's exposed name").required(true))
        .arg(words("args", "ARGS_JSON, or KEY=VALUE...")),
        using("resources", "every server's resources"),
        using(
            "read",
            "read a resource (from the server that lists it, or --server NAME)",
        )
        .arg(positional("uri", "the resource's URI").required(true)),
        using("templates", "every server's resource templates"),
        using(
            "prompts",
            "every server's prompts, by command name (mcp_<server>_<prompt>)",
        ),
        using(
            "prompt",
            "get a prompt by its command name, with its arguments filled in",
        )
        .arg(positional("name", "the prompt's command name").required(true))
        .arg(words("args", "ARGS_JSON, or KEY=VALUE...")),
        using(
            "complete",
            "completion values for a prompt's argument or a resource template's variable",
        )
        .arg(
            positional(
                "ref",
                "the prompt's command name, or the resource template",
            )
            .required(true),
        )
        .arg(positional("arg", "the argument or variable").required(true))
        .arg(positional("value", "what is typed so far")),
        using(
            "logs",
            "follow the servers' log messages until interrupted",
        )
        .arg(
            Arg::new("level")
                .long("level")
                .value_name("L")
                .help(wrap(
                    "debug, info, notice, warning, error, critical, alert or emergency: asks \
                     each server for that level and shows nothing below it",
                    OPTION_WIDTH,
                )),
        ),
        using(
            "info",
            "a server's identity, protocol, transport, capabilities, instructions",
        )
        .arg(positional(
            "name",
            "the server (the one on the command line, if omitted)",
        )),
        using(
            "status",
            "every server: status, error, source, the transport actually used",
        ),
        plain(
            "servers",
            "discovered server configs with their sources, trust state and why each one is \
             skipped (connects nothing, resolves nothing)",
        ),
        plain(
            "trust",
            "approve project servers that wait for approval, after showing what each runs (on \
             a terminal, asks first); remembered for their current config in \
             ~/.mcp-runtime/trusted.json; a changed config asks again, saying what changed",
        )
        .arg(words("names", "the servers"))
        .arg(flag("all", "every server that waits for approval"))
        .group(
            ArgGroup::new("which")
                .args(["names", "all"])
                .required(true),
        ),
        plain("untrust", "forget a project server's approval")
            .arg(positional("name", "the server").required(true)),
        plain(
            "login",
            "log in to a remote server (OAuth): opens the browser ($BROWSER, else the \
             system's) at its authorization page and receives the answer on 127.0.0.1. \
             Tokens are kept in ~/.mcp-runtime/auth.json (0600)",
        )
        .arg(positional("name", "the server").required(true))
        .arg(flag(
            "headless",
            "follow the authorization URL without a browser (servers that approve without a \
             user, CI)",
        ))
        .arg(
            flag(
                "no-browser",
                "print the URL instead, and also take the address the browser ends on, pasted \
                 on stdin (a browser on another machine, over SSH)",
            )
            .conflicts_with("headless"),
        ),
        plain("logout", "forget a server's OAuth tokens")
            .arg(positional("name", "the server").required(true)),
        plain("auth", "stored OAuth credentials")
            .subcommand_required(true)
            .subcommand(plain(
                "status",
                "what is stored for every server that uses OAuth",
            )),
        plain(
            "probe",
            "headless check of one server: connect, answer server requests unattended, call \
             every tool with arguments from its schema, except tools that say they write \
             (destructiveHint: true, readOnlyHint: false; reported as skipped; a tool with no \
             annotations is called); roots/list is answered with an empty temporary directory \
             (removed afterwards), never the current one",
        )
        .arg(positional("url", "the server's URL (or, last, `-- SERVER_COMMAND ARGS...`)"))
        .arg(server_command())
        .arg(flag("call-all", "call the tools that say they write too"))
        .arg(
            Arg::new("oauth")
                .long("oauth")
                .value_name("JSON")
                .help(wrap(
                    "an `oauth` object (`{}` to register): logs in headlessly on a 401",
                    OPTION_WIDTH,
                )),
        ),
        plain(
            "registry",
            "the MCP Registry (the official one, or --registry URL): find servers and read \
             their entries",
        )
        .subcommand_required(true)
        .subcommand(
            plain(
                "search",
                "servers whose name matches QUERY, each at its latest version (deleted ones \
                 left out, deprecated ones marked); --json: with the ways to run each and \
                 what each asks",
            )
            .arg(words("query", "the words of the query").required(true))
            .arg(option(
                "cursor",
                "C",
                "the page after an earlier search's last (it prints `--cursor C` when there \
                 are more)",
            ))
            .arg(registry_option()),
        )
        .subcommand(
            plain(
                "show",
                "one server (its latest version, or NAME@VERSION): its status, versions, \
                 the ways to run it and what each asks",
            )
            .arg(positional("name", "NAME or NAME@VERSION").required(true))
            .arg(registry_option()),
        ),
        plain(
            "add",
            "add a server from the MCP Registry (NAME[@VERSION]) or an MCP bundle (a .mcpb \
             file, or its URL with --sha256): asks what its entry or manifest asks (on a \
             terminal; --set KEY=VALUE otherwise), shows what will run (the command and its arguments \
             at a pinned version, or the URL; the names of environment values and headers) \
             and writes nothing until that is approved (a y on a terminal, --yes in a \
             script). Written to the project's .mcp-runtime/mcp.json, approved for exactly \
             what was shown, or with --scope user to ~/.mcp-runtime/mcp.json. --sandbox (and \
             its rules) writes it sandboxed",
        )
        .arg(
            positional(
                "name",
                "NAME or NAME@VERSION in the registry, or a bundle: ./FILE.mcpb or its URL",
            )
            .required(true),
        )
        .arg(option(
            "sha256",
            "HEX",
            "the SHA-256 the bundle must have (checked before anything of it is read)",
        ))
        .arg(
            Arg::new("way")
                .long("way")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help(wrap(
                    "run it the N-th way `registry show` lists (default: the first that runs \
                     here)",
                    OPTION_WIDTH,
                )),
        )
        .arg(option("as", "NAME", "the name it is added under (default: the last part of its registry name)"))
        .arg(
            option(
                "set",
                "KEY=VALUE",
                "an answer (repeatable), by the key `registry show` gives: env:NAME, \
                 header:NAME, var:NAME, arg:LABEL, or a bundle's user_config:KEY; for a secret, ${NAME} or !command keeps \
                 the value out of the file",
            )
            .action(ArgAction::Append),
        )
        .arg(flag("yes", "add what is shown without asking"))
        .arg(
            option("scope", "SCOPE", "project (default) or user")
                .value_parser(["project", "user"]),
        )
        .arg(registry_option()),
        plain(
            "completions",
            "a completion script for bash, elvish, fish, powershell or zsh, e.g. `mcp completions bash > \
             ~/.local/share/bash-completion/completions/mcp`",
        )
        .arg(
            positional("shell", "the shell")
                .required(true)
                .value_parser(clap::value_parser!(clap_complete::Shell)),
        ),
        plain(
            "repl",
            "read lines from stdin: `/mcp <sub> ...`, `tools`, `call TOOL [JSON | \
             KEY=VALUE...]`, `status` (as the command: each server's outcome first), `quit`; \
             prints each answer. With --config, the /mcp commands that edit config files \
             (add, remove, enable, disable) are refused: edit FILE and /mcp reload",
        ),
    ];
    all.into_iter().map(with_server).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tree_is_consistent() {
        super::command().debug_assert();
    }
}
