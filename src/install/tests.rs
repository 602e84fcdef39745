//! `server.json` read and checked on the registry's own examples (tests/data/registry), and the
//! configs they give.

use std::collections::BTreeMap;

use super::{Asked, ServerEntry};
use crate::error::Error;

macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!("../../tests/data/registry/", $path))
    };
}

const VALID: [&str; 13] = [
    fixture!("valid/minimal.json"),
    fixture!("valid/with-package.json"),
    fixture!("valid/with-remote.json"),
    fixture!("docs/brave-search.json"),
    fixture!("docs/fixed-arguments.json"),
    fixture!("docs/filesystem.json"),
    fixture!("docs/pypi-weather.json"),
    fixture!("docs/nuget.json"),
    fixture!("docs/docker-database.json"),
    fixture!("docs/remote-and-package.json"),
    fixture!("docs/mcpb.json"),
    fixture!("docs/remote-url-template.json"),
    fixture!("docs/local-url-template.json"),
];

fn entry(text: &str) -> ServerEntry {
    ServerEntry::parse(text).unwrap()
}

fn answers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn config_error(e: Error) -> String {
    match e {
        Error::Config { message } => message,
        other => panic!("not a config error: {other:?}"),
    }
}

#[test]
fn the_registry_s_valid_examples_are_read() {
    for text in VALID {
        let e = entry(text);
        assert!(e.name().contains('/'), "{}", e.name());
        assert!(!e.version().is_empty());
    }
    let e = entry(fixture!("valid/with-remote.json"));
    assert_eq!(e.title(), Some("Remote Weather"));
    assert_eq!(e.ways(), ["streamable-http https://{host}/mcp"]);
    let e = entry(fixture!("docs/remote-and-package.json"));
    assert_eq!(
        e.ways(),
        [
            "npm @example/hybrid-mcp-server 1.5.0",
            "streamable-http https://mcp.anonymous.modelcontextprotocol.io/http",
            "sse https://mcp.anonymous.modelcontextprotocol.io/sse"
        ]
    );
}

#[test]
fn the_registry_s_invalid_examples_are_refused_by_the_rule_they_break() {
    for (text, rule) in [
        (
            fixture!("invalid/bad-name-pattern.json"),
            "is not namespace/name",
        ),
        (
            fixture!("invalid/description-too-long.json"),
            "description is 111 characters long (from 1 to 100 allowed)",
        ),
        (
            fixture!("invalid/missing-name.json"),
            "missing field `name`",
        ),
        (
            fixture!("invalid/package-version-latest.json"),
            "packages[0].version is \"latest\"",
        ),
        (
            fixture!("invalid/positional-argument-missing-value.json"),
            "packages[0].packageArguments[0] is a positional argument with neither valueHint \
             nor value",
        ),
    ] {
        let message = config_error(ServerEntry::parse(text).unwrap_err());
        assert!(message.starts_with("server.json: "), "{message}");
        assert!(message.contains(rule), "{message} lacks {rule:?}");
    }
}

#[test]
fn every_rule_broken_is_named() {
    let message = config_error(
        ServerEntry::parse(
            r#"{"name": "a/b/c", "description": "", "version": "1",
                "packages": [{"registryType": "npm", "identifier": "x", "version": "1",
                              "fileSha256": "ABC", "transport": {"type": "websocket"},
                              "runtimeArguments": [{"type": "flag"}],
                              "environmentVariables": [{"name": "K", "format": "date"}]}],
                "remotes": [{"type": "stdio", "url": "ftp://x"}]}"#,
        )
        .unwrap_err(),
    );
    for rule in [
        "name \"a/b/c\"",
        "description is 0 characters",
        "packages[0].fileSha256",
        "packages[0].transport.type \"websocket\"",
        "packages[0].runtimeArguments[0].type \"flag\"",
        "packages[0].environmentVariables[0].format \"date\"",
        "remotes[0].type \"stdio\"",
        "remotes[0].url is not an http or https URL",
    ] {
        assert!(message.contains(rule), "{message} lacks {rule:?}");
    }
}

#[test]
fn an_npm_package_runs_with_npx_at_its_version_after_its_questions() {
    let e = entry(fixture!("valid/with-package.json"));
    let asked = e.questions(0).unwrap();
    let keys: Vec<&str> = asked.iter().map(|q| q.key.as_str()).collect();
    // The named --port has a value of its own: nothing to ask.
    assert_eq!(keys, ["env:API_KEY", "arg:config_path"]);
    assert_eq!(asked[0].asked, Asked::Env);
    assert!(asked[0].secret && asked[0].required);
    assert!(!asked[1].secret && !asked[1].required);

    let missing = config_error(e.plan(0, &BTreeMap::new()).unwrap_err());
    assert_eq!(
        missing,
        "io.github.user/local-weather 1.0.0: env:API_KEY is required"
    );

    let config = e
        .plan(
            0,
            &answers(&[
                ("env:API_KEY", "${WEATHER_API_KEY}"),
                ("arg:config_path", "/etc/weather.json"),
            ]),
        )
        .unwrap();
    assert_eq!(config.command.as_deref(), Some("npx"));
    assert_eq!(
        config.args,
        [
            "-y",
            "@modelcontextprotocol/server-weather@1.0.0",
            "/etc/weather.json",
            "--port",
            "8080"
        ]
    );
    assert_eq!(config.env["API_KEY"], "${WEATHER_API_KEY}");
    assert_eq!(config.transport_type().unwrap(), "stdio");
}

#[test]
fn pypi_nuget_and_oci_packages_run_with_their_runtimes() {
    let pypi = entry(fixture!("docs/pypi-weather.json"))
        .plan(0, &answers(&[("env:WEATHER_API_KEY", "${KEY}")]))
        .unwrap();
    assert_eq!(pypi.command.as_deref(), Some("uvx"));
    assert_eq!(pypi.args, ["weather-mcp-server==0.5.0"]);
    // An optional variable takes its default.
    assert_eq!(pypi.env["WEATHER_UNITS"], "celsius");

    // Fixed arguments go after `--`, as the registry's documentation says.
    let nuget = entry(fixture!("docs/fixed-arguments.json"))
        .plan(0, &BTreeMap::new())
        .unwrap();
    assert_eq!(nuget.command.as_deref(), Some("dnx"));
    assert_eq!(
        nuget.args,
        [
            "Knapcode.SampleMcpServer@0.4.0-beta",
            "--yes",
            "--",
            "mcp",
            "start"
        ]
    );

    let fs = entry(fixture!("docs/filesystem.json"));
    let asked: Vec<String> = fs
        .questions(1)
        .unwrap()
        .into_iter()
        .map(|q| q.key)
        .collect();
    assert_eq!(
        asked,
        ["env:LOG_LEVEL", "var:source_path", "var:target_path"]
    );
    let oci = fs
        .plan(1, &answers(&[("var:source_path", "/home/me/work")]))
        .unwrap();
    assert_eq!(oci.command.as_deref(), Some("docker"));
    assert_eq!(
        oci.args,
        [
            "run",
            "-i",
            "--rm",
            "--mount",
            "type=bind,src=/home/me/work,dst=/project",
            "-e",
            "LOG_LEVEL",
            "oci.registry.example/mcp/filesystem:1.0.2",
            "/project"
        ]
    );
    assert_eq!(oci.env["LOG_LEVEL"], "info");

    // A repeated argument: one value per line of its answer.
    let npm = fs
        .plan(0, &answers(&[("arg:target_dir", "/a\n/b\n")]))
        .unwrap();
    assert_eq!(
        npm.args,
        [
            "-y",
            "@modelcontextprotocol/server-filesystem@1.0.2",
            "/a",
            "/b"
        ]
    );
}

#[test]
fn answers_outside_their_choices_or_format_are_refused() {
    let e = entry(fixture!("docs/docker-database.json"));
    let good = [
        ("var:db_type", "postgres"),
        ("arg:database_name", "orders"),
        ("env:DB_USERNAME", "app"),
        ("env:DB_PASSWORD", "${DB_PASSWORD}"),
    ];
    let config = e.plan(0, &answers(&good)).unwrap();
    assert!(config
        .args
        .windows(2)
        .any(|w| w == ["-e", "DB_TYPE=postgres"]));
    assert!(config.args.windows(2).any(|w| w == ["--host", "localhost"]));

    let mut bad = answers(&good);
    bad.insert("var:db_type".into(), "oracle".into());
    bad.insert("arg:--port".into(), "five".into());
    let message = config_error(e.plan(0, &bad).unwrap_err());
    assert!(
        message.contains("var:db_type must be one of postgres, mysql, mongodb, redis"),
        "{message}"
    );
    assert!(message.contains("arg:--port must be a number"), "{message}");
    // A reference is read later: nothing to check now.
    let mut referenced = answers(&good);
    referenced.insert("arg:--port".into(), "${DB_PORT}".into());
    let config = e.plan(0, &referenced).unwrap();
    assert!(config
        .args
        .windows(2)
        .any(|w| w == ["--port", "${DB_PORT}"]));
}

#[test]
fn a_remote_gets_its_url_variables_and_headers() {
    let e = entry(fixture!("valid/with-remote.json"));
    let asked: Vec<String> = e.questions(0).unwrap().into_iter().map(|q| q.key).collect();
    assert_eq!(asked, ["var:host", "header:Authorization"]);
    let message = config_error(e.plan(0, &BTreeMap::new()).unwrap_err());
    assert!(
        message.ends_with("header:Authorization is required"),
        "{message}"
    );

    let config = e
        .plan(0, &answers(&[("header:Authorization", "Bearer ${TOKEN}")]))
        .unwrap();
    assert_eq!(config.url.as_deref(), Some("https://api.example.com/mcp"));
    assert_eq!(config.transport.as_deref(), Some("http"));
    assert_eq!(config.headers["Authorization"], "Bearer ${TOKEN}");

    let tenant = entry(fixture!("docs/remote-url-template.json"));
    let message = config_error(tenant.plan(0, &BTreeMap::new()).unwrap_err());
    assert!(message.ends_with("var:tenant_id is required"), "{message}");
    let config = tenant
        .plan(0, &answers(&[("var:tenant_id", "emea-cell1")]))
        .unwrap();
    assert_eq!(
        config.url.as_deref(),
        Some("https://anonymous.modelcontextprotocol.io/mcp/emea-cell1")
    );

    let sse = entry(fixture!("docs/remote-and-package.json"))
        .plan(2, &BTreeMap::new())
        .unwrap();
    assert_eq!(sse.transport.as_deref(), Some("sse"));
}

#[test]
fn what_cannot_be_run_as_a_command_says_why() {
    let bundle = config_error(
        entry(fixture!("docs/mcpb.json"))
            .plan(0, &BTreeMap::new())
            .unwrap_err(),
    );
    assert!(
        bundle.contains("an MCP bundle is downloaded and opened (ServerEntry::bundle)"),
        "{bundle}"
    );
    let bundled = entry(fixture!("docs/mcpb.json"));
    let (url, sha256) = bundled.bundle(0).unwrap();
    assert!(url.ends_with("/text-editor.mcpb"), "{url}");
    assert_eq!(sha256.len(), 64);

    let served = config_error(
        entry(fixture!("docs/local-url-template.json"))
            .plan(0, &BTreeMap::new())
            .unwrap_err(),
    );
    assert!(
        served.contains("serves streamable-http on a port of its own"),
        "{served}"
    );

    let none = config_error(
        entry(fixture!("valid/minimal.json"))
            .plan(0, &BTreeMap::new())
            .unwrap_err(),
    );
    assert_eq!(
        none,
        "io.github.user/weather has 0 ways to run it; there is no way 0"
    );

    // No version to pin, an image without a tag: never whatever is latest.
    for (package, why) in [
        (
            r#"{"registryType": "npm", "identifier": "x", "transport": {"type": "stdio"}}"#,
            "x names no version to run",
        ),
        (
            r#"{"registryType": "oci", "identifier": "registry.example/x", "transport": {"type": "stdio"}}"#,
            "registry.example/x names no tag or digest",
        ),
        (
            r#"{"registryType": "oci", "identifier": "registry.example/x:latest", "transport": {"type": "stdio"}}"#,
            "names no tag or digest",
        ),
        (
            r#"{"registryType": "cargo", "identifier": "x", "version": "1", "transport": {"type": "stdio"}}"#,
            "packages of type \"cargo\" cannot be run yet",
        ),
    ] {
        let text = format!(
            r#"{{"name": "io.example/x", "description": "d", "version": "1", "packages": [{package}]}}"#
        );
        let message = config_error(entry(&text).plan(0, &BTreeMap::new()).unwrap_err());
        assert!(message.contains(why), "{message} lacks {why:?}");
    }
    // A digest pins as well as a tag.
    let text = r#"{"name": "io.example/x", "description": "d", "version": "1", "packages": [
        {"registryType": "oci", "identifier": "registry.example/x@sha256:abcd", "transport": {"type": "stdio"}}]}"#;
    let config = entry(text).plan(0, &BTreeMap::new()).unwrap();
    assert_eq!(
        config.args.last().map(String::as_str),
        Some("registry.example/x@sha256:abcd")
    );
}

fn package_entry(package: &str) -> ServerEntry {
    entry(&format!(
        r#"{{"name": "io.example/x", "description": "d", "version": "1", "packages": [{package}]}}"#
    ))
}

#[test]
fn values_are_filled_in_one_pass_and_each_line_of_a_repeated_one_is_checked() {
    // An answer holding a {name} is not filled in again.
    let e = package_entry(
        r#"{"registryType": "npm", "identifier": "x", "version": "1", "transport": {"type": "stdio"},
            "packageArguments": [{"type": "named", "name": "--pair", "value": "{a}-{b}",
                                  "variables": {"a": {}, "b": {"isSecret": true}}}],
            "environmentVariables": [{"name": "B", "value": "{b}",
                                      "variables": {"b": {"isRequired": true}}}]}"#,
    );
    let asked = e.questions(0).unwrap();
    // `b` is one question, secret and required as either of its uses says.
    let b: Vec<_> = asked.iter().filter(|q| q.key == "var:b").collect();
    assert_eq!(b.len(), 1);
    assert!(b[0].secret && b[0].required);
    let config = e
        .plan(0, &answers(&[("var:a", "{b}"), ("var:b", "two")]))
        .unwrap();
    assert_eq!(config.args[2..], ["--pair", "{b}-two"]);
    assert_eq!(config.env["B"], "two");

    let repeated = package_entry(
        r#"{"registryType": "npm", "identifier": "x", "version": "1", "transport": {"type": "stdio"},
            "packageArguments": [{"type": "named", "name": "--level", "format": "number",
                                  "isRepeated": true, "choices": ["1", "2"]},
                                 {"type": "named", "name": "--verbose", "format": "boolean"}]}"#,
    );
    let config = repeated
        .plan(
            0,
            &answers(&[("arg:--level", "1\n2"), ("arg:--verbose", "true")]),
        )
        .unwrap();
    assert_eq!(
        config.args[2..],
        ["--level", "1", "--level", "2", "--verbose"]
    );
    let message = config_error(
        repeated
            .plan(
                0,
                &answers(&[("arg:--level", "1\n3"), ("arg:--verbose", "${V}")]),
            )
            .unwrap_err(),
    );
    assert!(
        message.contains("arg:--level must be one of 1, 2"),
        "{message}"
    );
    assert!(
        message.contains("arg:--verbose must be true or false"),
        "{message}"
    );
}

#[test]
fn a_remote_s_url_is_complete_or_refused() {
    let remote = |url: &str, variables: &str| {
        entry(&format!(
            r#"{{"name": "io.example/x", "description": "d", "version": "1",
                "remotes": [{{"type": "streamable-http", "url": "{url}", "variables": {{{variables}}}}}]}}"#
        ))
    };
    // An optional variable with no default still has to be given.
    let e = remote("https://{region}.example/mcp", r#""region": {}"#);
    let message = config_error(e.plan(0, &BTreeMap::new()).unwrap_err());
    assert!(
        message.ends_with("var:region is needed by the URL"),
        "{message}"
    );
    // A hole that is not a variable is named from the template, never from an answer.
    let e = remote("https://{region}.example/{path}", r#""region": {}"#);
    let message = config_error(
        e.plan(0, &answers(&[("var:region", "secret{x}")]))
            .unwrap_err(),
    );
    assert!(
        message.ends_with("the URL's {path} is not one of its variables"),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
    // An answer with braces of its own is taken as it is.
    let e = remote("https://{region}.example/mcp", r#""region": {}"#);
    let config = e.plan(0, &answers(&[("var:region", "a{b}")])).unwrap();
    assert_eq!(config.url.as_deref(), Some("https://a{b}.example/mcp"));
}

#[test]
fn a_way_that_cannot_run_has_no_questions() {
    let message = config_error(entry(fixture!("docs/mcpb.json")).questions(0).unwrap_err());
    assert!(message.contains("an MCP bundle"), "{message}");
}

#[test]
fn the_publishers_own_values_may_not_run_a_command_or_read_the_environment() {
    let with_env = |env: &str| {
        package_entry(&format!(
            r#"{{"registryType": "npm", "identifier": "x", "version": "1",
                "transport": {{"type": "stdio"}}, "environmentVariables": [{env}]}}"#
        ))
    };
    for (env, why) in [
        (r#"{"name": "A", "value": "!curl x | sh"}"#, "is a command"),
        (r#"{"name": "A", "default": "!id"}"#, "is a command"),
        (
            r#"{"name": "A", "value": "${AWS_SECRET_ACCESS_KEY}"}"#,
            "reads the user's environment",
        ),
        (
            r#"{"name": "A", "value": "PATH"}"#,
            "name of one of your environment variables",
        ),
    ] {
        let e = config_error(with_env(env).plan(0, &BTreeMap::new()).unwrap_err());
        assert!(e.contains(why), "{env}: {e}");
    }
    // The user's own answer may be a reference or a command.
    let answered = with_env(r#"{"name": "A", "default": "!id"}"#)
        .plan(0, &answers(&[("env:A", "!pass show a")]))
        .unwrap();
    assert_eq!(answered.env["A"], "!pass show a");
}
