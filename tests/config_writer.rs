//! The config writer: atomic edits of the host's own files that keep what they do not know.

mod common;

use std::path::Path;

use common::fixture::Fixture;
use mcp_runtime::config::{ConfigWriter, Level, ServerConfig};
use serde_json::{json, Value};

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_writer_adds_removes_and_toggles_keeping_unknown_fields() {
    let f = Fixture::new("writer");
    let writer = ConfigWriter::new(&f.project(), &f.options());
    let project_file = writer.path(Level::Project).to_path_buf();
    assert_eq!(project_file, f.project().join(".mcp-runtime/mcp.json"));
    f.write(".keep", "");
    std::fs::create_dir_all(project_file.parent().unwrap()).unwrap();
    std::fs::write(&project_file, r#"{"$schema": "x", "custom": {"keep": true}, "mcpServers": {"old": {"command": "o", "alwaysAllow": ["t"]}}}"#).unwrap();

    writer
        .add(
            Level::Project,
            "new",
            &ServerConfig::stdio("npx", ["-y", "pkg"]),
        )
        .unwrap();
    let v = read(&project_file);
    assert_eq!(v["custom"], json!({"keep": true}));
    assert_eq!(v["$schema"], "x");
    assert_eq!(v["mcpServers"]["old"]["alwaysAllow"], json!(["t"]));
    assert_eq!(
        v["mcpServers"]["new"],
        json!({"command": "npx", "args": ["-y", "pkg"]})
    );
    assert!(
        writer
            .add(
                Level::Project,
                "new",
                &ServerConfig::stdio("x", Vec::<String>::new())
            )
            .is_err(),
        "no silent overwrite"
    );
    assert!(writer
        .add(
            Level::Project,
            "bad name!",
            &ServerConfig::stdio("x", Vec::<String>::new())
        )
        .is_err());

    // Round trip through discovery.
    assert_eq!(f.load().configs["new"].command.as_deref(), Some("npx"));

    // Disable/enable one of our servers: its own `enabled` field.
    let loaded = f.load();
    writer
        .set_enabled("new", false, loaded.sources.get("new"))
        .unwrap();
    assert_eq!(read(&project_file)["mcpServers"]["new"]["enabled"], false);
    assert!(!f.load().configs.contains_key("new"));
    let found = f
        .load()
        .discovered
        .into_iter()
        .find(|d| d.name == "new")
        .unwrap();
    writer
        .set_enabled("new", true, Some(&found.source))
        .unwrap();
    assert!(read(&project_file)["mcpServers"]["new"]
        .get("enabled")
        .is_none());
    assert!(f.load().configs.contains_key("new"));

    // A server from a file we do not own: the user file's lists.
    f.write(
        "home/.cursor/mcp.json",
        r#"{"mcpServers": {"theirs": {"command": "t", "enabled": false}}}"#,
    );
    let theirs = f
        .load()
        .discovered
        .into_iter()
        .find(|d| d.name == "theirs")
        .unwrap();
    writer
        .set_enabled("theirs", true, Some(&theirs.source))
        .unwrap();
    let user_file = writer.path(Level::User).to_path_buf();
    assert_eq!(read(&user_file)["enabledServers"], json!(["theirs"]));
    assert!(f.load().configs.contains_key("theirs"));
    writer
        .set_enabled("theirs", false, Some(&theirs.source))
        .unwrap();
    assert_eq!(read(&user_file)["disabledServers"], json!(["theirs"]));
    assert!(read(&user_file).get("enabledServers").is_none());
    assert!(!f.load().configs.contains_key("theirs"));
    // The Cursor file was never touched.
    assert_eq!(
        read(&f.home().join(".cursor/mcp.json"))["mcpServers"]["theirs"]["enabled"],
        false
    );

    assert!(writer.remove(Level::Project, "new").unwrap());
    assert!(!writer.remove(Level::Project, "new").unwrap());
    assert!(read(&project_file)["mcpServers"].get("new").is_none());

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&project_file)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn the_writer_refuses_a_malformed_file() {
    let f = Fixture::new("writer-malformed");
    let writer = ConfigWriter::new(&f.project(), &f.options());
    let path = f.write("project/.mcp-runtime/mcp.json", "{\"mcpServers\": {broken");
    let err = writer
        .add(
            Level::Project,
            "x",
            &ServerConfig::stdio("x", Vec::<String>::new()),
        )
        .unwrap_err();
    assert!(err.to_string().contains("not overwritten"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"mcpServers\": {broken"
    );
    // A user file that cannot be parsed is not overwritten by a toggle either.
    let user = f.write("home/.mcp-runtime/mcp.json", "[[[");
    assert!(writer.set_enabled("x", false, None).is_err());
    assert_eq!(std::fs::read_to_string(&user).unwrap(), "[[[");
}

#[test]
fn concurrent_writers_never_leave_a_torn_file() {
    let f = Fixture::new("writer-atomic");
    let writer = ConfigWriter::new(&f.project(), &f.options());
    let path = writer.path(Level::User).to_path_buf();
    std::thread::scope(|s| {
        for t in 0..4 {
            let writer = writer.clone();
            s.spawn(move || {
                for i in 0..25 {
                    writer
                        .add(
                            Level::User,
                            &format!("s{t}-{i}"),
                            &ServerConfig::stdio("x", Vec::<String>::new()),
                        )
                        .unwrap();
                }
            });
        }
        // Meanwhile, every read sees a whole JSON document.
        s.spawn(|| {
            for _ in 0..200 {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    serde_json::from_str::<Value>(&text).expect("a torn file");
                }
            }
        });
    });
    // No edit lost another.
    assert_eq!(read(&path)["mcpServers"].as_object().unwrap().len(), 100);
}
