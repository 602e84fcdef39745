//! From a `server.json` to a server config: the questions one way of running it asks (its
//! environment variables, headers, URL variables and arguments), and, given the answers, the
//! command that runs a package (`npx`, `uvx`, `dnx`, `docker`, at the version the entry names,
//! never whatever is latest) or the URL and headers of a remote. Sans I/O: nothing is fetched,
//! written or run here.

use std::collections::BTreeMap;

use super::server_json::{Argument, Input, KeyValueInput, Package, Remote};
use crate::config::ServerConfig;

/// What a question fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Asked {
    /// An environment variable of the server's process (key `env:NAME`).
    Env,
    /// A header sent to a remote server (key `header:NAME`).
    Header,
    /// A `{variable}` of a URL or of a fixed value (key `var:NAME`).
    Variable,
    /// A command-line argument (key `arg:LABEL`: a positional argument's label, or a named
    /// one's flag with its dashes, `arg:--port`).
    Argument,
    /// A setting an MCP bundle's manifest asks for (`user_config`; key `user_config:KEY`),
    /// which the bundle's command line or environment takes.
    UserConfig,
}

/// A value the host asks its user for before a server is added.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Question {
    /// The answer's key in the map [`ServerEntry::plan`](super::ServerEntry::plan) takes
    /// (`env:API_KEY`, `header:Authorization`, `var:host`, `arg:config_path`, `arg:--port`).
    pub key: String,
    /// What it fills in.
    pub asked: Asked,
    /// Its name: the variable, header, URL variable or argument label.
    pub name: String,
    /// What the publisher says it is.
    pub description: Option<String>,
    /// Whether the server cannot be added without it.
    pub required: bool,
    /// A secret (a key, a token): asked without echo. An environment variable's or a header's
    /// is best answered with a reference (`${NAME}`, read from the environment when the config
    /// is read, or `!command`, run when the server starts), so that the value stays out of the
    /// config file. An argument's or a URL variable's value shows in the command line or the
    /// URL however it is written (`${NAME}` there still keeps it out of the file; `!command` is
    /// not run there): say so to the user.
    pub secret: bool,
    /// The value when none is given.
    pub default: Option<String>,
    /// An example of a value, for an empty field.
    pub placeholder: Option<String>,
    /// The only values allowed, when the publisher lists them.
    pub choices: Vec<String>,
    /// `string`, `number`, `boolean`, `filepath` or (a bundle's) `directory`.
    pub format: String,
    /// An argument that may be given several times: its answer holds one value per line.
    pub repeated: bool,
}

/// The walk over one way's inputs: the questions met, and with answers, the values they give
/// and what is missing or wrong.
pub(crate) struct Walk<'a> {
    answers: &'a BTreeMap<String, String>,
    pub questions: Vec<Question>,
    pub problems: Vec<String>,
}

impl<'a> Walk<'a> {
    pub(crate) fn new(answers: &'a BTreeMap<String, String>) -> Walk<'a> {
        Walk {
            answers,
            questions: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The value of `input` (fixed, answered or its default), `None` when it has none (a
    /// required one is then a problem). A variable met again (the same name in two values)
    /// is one question, secret or required if either is.
    fn fill(&mut self, asked: Asked, name: &str, input: &Input, repeated: bool) -> Option<String> {
        let key = format!("{}:{name}", prefix(asked));
        if let Some(template) = &input.value {
            self.publisher(&key, asked, template, !template.contains('{'));
            return self.substitute(template, &input.variables, false);
        }
        match self.questions.iter_mut().find(|q| q.key == key) {
            Some(q) => {
                q.secret |= input.is_secret;
                q.required |= input.is_required;
            }
            None => self.questions.push(Question {
                key: key.clone(),
                asked,
                name: name.to_owned(),
                description: input.description.clone(),
                required: input.is_required,
                secret: input.is_secret,
                default: input.default.clone(),
                placeholder: input.placeholder.clone(),
                choices: input.choices.clone(),
                format: input.format.clone().unwrap_or_else(|| "string".to_owned()),
                repeated,
            }),
        }
        let answer = self.answers.get(&key).filter(|v| !v.is_empty());
        if let (None, Some(default)) = (answer, &input.default) {
            self.publisher(&key, asked, default, true);
        }
        let value = answer.or(input.default.as_ref()).cloned();
        match value {
            Some(v) => {
                if !is_reference(&v) {
                    for one in values(&v, repeated) {
                        self.allowed(&key, input, &one);
                    }
                }
                Some(v)
            }
            None => {
                if input.is_required {
                    self.problems.push(format!("{key} is required"));
                }
                None
            }
        }
    }

    /// A problem when the publisher's own text for `key` (a fixed value, a default) would make
    /// the config run a command (`!...` in an environment value or a header), read the user's
    /// environment (`${NAME}`, anywhere), or (`whole`: the text is all of the value) be an
    /// environment value or header that is the name of one of the user's environment
    /// variables, which a config reads as that variable. The user's own answers may be any of
    /// these: they are the user's references.
    fn publisher(&mut self, key: &str, asked: Asked, text: &str, whole: bool) {
        let env_like = matches!(asked, Asked::Env | Asked::Header);
        if text.contains("${") {
            self.problems.push(format!(
                "the entry's own value for {key} reads the user's environment (${{...}})"
            ));
        } else if env_like && text.starts_with('!') {
            self.problems.push(format!(
                "the entry's own value for {key} is a command (!...), which would run on this \
                 machine"
            ));
        } else if env_like && whole && !text.is_empty() && std::env::var_os(text).is_some() {
            self.problems.push(format!(
                "the entry's own value for {key} is the name of one of your environment \
                 variables, which a config reads as its value"
            ));
        }
    }

    /// `template` with each `{name}` of `variables` replaced by its value, in one pass from the
    /// left (a value is never read for variables of its own); a `{name}` that is not a variable
    /// stays as written (the schema's rule), except in a URL (`url`), where it is a problem, as
    /// is a variable with no value. `None` when a variable has no value.
    fn substitute(
        &mut self,
        template: &str,
        variables: &BTreeMap<String, Input>,
        url: bool,
    ) -> Option<String> {
        let mut out = String::with_capacity(template.len());
        let mut complete = true;
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                out.push_str(&rest[open..]);
                rest = "";
                break;
            };
            let name = &after[..close];
            match variables.get(name) {
                Some(input) => match self.fill(Asked::Variable, name, input, false) {
                    Some(v) => out.push_str(&v),
                    None => {
                        complete = false;
                        if url && !input.is_required {
                            self.problems
                                .push(format!("var:{name} is needed by the URL"));
                        }
                    }
                },
                None => {
                    if url {
                        self.problems
                            .push(format!("the URL's {{{name}}} is not one of its variables"));
                    }
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            }
            rest = &after[close + 1..];
        }
        out.push_str(rest);
        complete.then_some(out)
    }

    /// A problem when `value` is not among the choices or not of the format.
    fn allowed(&mut self, key: &str, input: &Input, value: &str) {
        if !input.choices.is_empty() && !input.choices.iter().any(|c| c == value) {
            self.problems
                .push(format!("{key} must be one of {}", input.choices.join(", ")));
        }
        let fits = match input.format.as_deref() {
            Some("number") => value.trim().parse::<f64>().is_ok_and(f64::is_finite),
            Some("boolean") => matches!(value, "true" | "false"),
            _ => true,
        };
        if !fits {
            self.problems.push(format!(
                "{key} must be a {}",
                input.format.as_deref().unwrap_or("string")
            ));
        }
    }

    /// The command-line words of `arguments`.
    fn arguments(&mut self, arguments: &[Argument], words: &mut Vec<String>) {
        for a in arguments {
            match a.kind.as_str() {
                "named" => {
                    let flag = a.name.clone().unwrap_or_default();
                    let Some(value) = self.fill(Asked::Argument, &flag, &a.input, a.is_repeated)
                    else {
                        continue;
                    };
                    // A flag without a value of its own: present when answered true (which a
                    // reference, read later, cannot say).
                    if a.input.value.is_none() && a.input.format.as_deref() == Some("boolean") {
                        match value.as_str() {
                            "true" => words.push(flag),
                            "false" => {}
                            _ => self
                                .problems
                                .push(format!("arg:{flag} must be true or false")),
                        }
                        continue;
                    }
                    for v in values(&value, a.is_repeated) {
                        words.push(flag.clone());
                        words.push(v);
                    }
                }
                _ => {
                    let label = a.value_hint.as_deref().unwrap_or_default();
                    if let Some(value) = self.fill(Asked::Argument, label, &a.input, a.is_repeated)
                    {
                        words.extend(values(&value, a.is_repeated));
                    }
                }
            }
        }
    }

    /// Environment variables or headers, into `into`.
    fn named(
        &mut self,
        asked: Asked,
        entries: &[KeyValueInput],
        into: &mut BTreeMap<String, String>,
    ) {
        for kv in entries {
            if let Some(v) = self.fill(asked, &kv.name, &kv.input, false) {
                into.insert(kv.name.clone(), v);
            }
        }
    }

    /// `config`, or the problems met as one error text.
    pub(crate) fn finish(&self, config: ServerConfig) -> Result<ServerConfig, String> {
        if self.problems.is_empty() {
            Ok(config)
        } else {
            Err(self.problems.join("; "))
        }
    }
}

/// The values of an answer: one per line for a repeated argument, else the answer.
fn values(answer: &str, repeated: bool) -> Vec<String> {
    if repeated {
        answer
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    } else {
        vec![answer.to_owned()]
    }
}

fn prefix(asked: Asked) -> &'static str {
    match asked {
        Asked::Env => "env",
        Asked::Header => "header",
        Asked::Variable => "var",
        Asked::Argument => "arg",
        Asked::UserConfig => "user_config",
    }
}

/// The runtime a package runs with: its command, the words before the runtime arguments, and
/// how the package is named at its version.
struct Runtime {
    command: &'static str,
    lead: &'static [&'static str],
    pin: Pin,
}

/// How a package is named at its version.
enum Pin {
    /// `identifier`, the separator, the version (`name@1.2.3`, `name==1.2.3`).
    Version(&'static str),
    /// An OCI image at its tag or digest.
    Image,
}

/// The runtime of `package`: its registry's usual one, or the alternative its `runtimeHint`
/// names (`bunx` for npm, `pipx` for PyPI, `podman` for OCI). Where the package is fetched from
/// is the package manager's own configuration (a company's mirror included), not the entry's
/// `registryBaseUrl`.
fn runtime(package: &Package) -> Result<Runtime, String> {
    let hint = package.runtime_hint.as_deref();
    let (command, lead, pin): (_, &'static [&'static str], _) =
        match (package.registry_type.as_str(), hint) {
            ("npm", Some("bunx")) => ("bunx", &[], Pin::Version("@")),
            ("npm", _) => ("npx", &["-y"], Pin::Version("@")),
            ("pypi", Some("pipx")) => ("pipx", &["run"], Pin::Version("==")),
            ("pypi", _) => ("uvx", &[], Pin::Version("==")),
            ("nuget", _) => ("dnx", &[], Pin::Version("@")),
            ("oci", Some("podman")) => ("podman", &["run", "-i", "--rm"], Pin::Image),
            ("oci", _) => ("docker", &["run", "-i", "--rm"], Pin::Image),
            ("mcpb", _) => {
                return Err(
                    "an MCP bundle is downloaded and opened (ServerEntry::bundle), not run as a \
                     command"
                        .to_owned(),
                )
            }
            (other, _) => return Err(format!("packages of type {other:?} cannot be run yet")),
        };
    Ok(Runtime { command, lead, pin })
}

impl Pin {
    /// `package` at its version, which must be one (never `latest`, never missing).
    fn reference(&self, package: &Package) -> Result<String, String> {
        match self {
            Pin::Version(separator) => {
                let version = pinned(package)?;
                Ok(format!("{}{separator}{version}", package.identifier))
            }
            Pin::Image => image(package),
        }
    }
}

/// The package's version, which must be one (never `latest`, never missing).
fn pinned(package: &Package) -> Result<&str, String> {
    match package.version.as_deref() {
        Some(v) if !v.is_empty() && v != "latest" => Ok(v),
        _ => Err(format!(
            "{} names no version to run (a package is run at the version the entry names, \
             never whatever is latest)",
            package.identifier
        )),
    }
}

/// An OCI image at a tag or digest: the identifier's own, else the entry's version.
fn image(package: &Package) -> Result<String, String> {
    let id = &package.identifier;
    let last = id.rsplit('/').next().unwrap_or(id);
    let tag = last.split_once(':').map(|(_, t)| t);
    if id.contains('@') {
        return Ok(id.clone());
    }
    match (tag, package.version.as_deref()) {
        (Some("latest"), _) | (None, None | Some("latest")) => Err(format!(
            "{id} names no tag or digest to run (never whatever is latest)"
        )),
        (Some(_), _) => Ok(id.clone()),
        (None, Some(v)) => Ok(format!("{id}:{v}")),
    }
}

/// The config that runs `package` with `walk`'s answers (see [`Walk::finish`] for what was
/// missing or wrong); an error when it cannot be run at all.
pub(crate) fn package_walk(package: &Package, walk: &mut Walk<'_>) -> Result<ServerConfig, String> {
    if package.transport.kind != "stdio" {
        return Err(format!(
            "{} serves {} on a port of its own; only stdio packages are run (a remote, when \
             the entry has one, reaches the same server)",
            package.identifier, package.transport.kind
        ));
    }
    let runtime = runtime(package)?;
    // Every input is walked before the version can fail, so every question is met.
    let mut env = BTreeMap::new();
    walk.named(Asked::Env, &package.environment_variables, &mut env);
    let mut before = Vec::new();
    walk.arguments(&package.runtime_arguments, &mut before);
    let mut after = Vec::new();
    walk.arguments(&package.package_arguments, &mut after);
    let reference = runtime.pin.reference(package)?;

    let mut args: Vec<String> = runtime.lead.iter().map(|w| (*w).to_owned()).collect();
    args.extend(before);
    if package.registry_type == "oci" {
        // The container gets the variables through the runtime's own environment.
        for name in env.keys() {
            args.extend(["-e".to_owned(), name.clone()]);
        }
    }
    args.push(reference);
    if package.registry_type == "nuget" {
        args.push("--yes".to_owned());
        if !after.is_empty() {
            args.push("--".to_owned());
        }
    }
    args.extend(after);
    let mut config = ServerConfig::stdio(runtime.command, args);
    config.env = env;
    Ok(config)
}

/// The config that reaches `remote` with `walk`'s answers (see [`Walk::finish`]); an error
/// when it cannot be reached at all.
pub(crate) fn remote_walk(remote: &Remote, walk: &mut Walk<'_>) -> Result<ServerConfig, String> {
    let transport = match remote.kind.as_str() {
        "streamable-http" => "http",
        "sse" => "sse",
        other => return Err(format!("a remote of type {other:?} cannot be reached")),
    };
    let url = walk.substitute(&remote.url, &remote.variables, true);
    let mut headers = BTreeMap::new();
    walk.named(Asked::Header, &remote.headers, &mut headers);
    let mut config = ServerConfig {
        transport: Some(transport.to_owned()),
        headers,
        ..ServerConfig::default()
    };
    config.url = url;
    Ok(config)
}

/// An answer that names where the value is, read when the config is (`${NAME}`) or when the
/// server starts (`!command`): its value cannot be checked now.
fn is_reference(answer: &str) -> bool {
    answer.starts_with("${") || answer.starts_with('!')
}
