//! Bundles made by the tests' own zip writer (stored entries, Unix modes): opened, checked,
//! proposed and unpacked; the ones a bundle must never be are refused with nothing written.

use super::zip::tests::zip;
use super::*;
use crate::config::Level;

const MANIFEST: &str = r#"{
  "manifest_version": "0.3",
  "name": "hello",
  "version": "1.0.0",
  "description": "Says hello",
  "author": {"name": "Someone"},
  "server": {
    "type": "binary",
    "entry_point": "server/run",
    "mcp_config": {
      "command": "${__dirname}/server/run",
      "args": ["--greeting", "${user_config.greeting}"],
      "env": {"KEY": "${user_config.key}"}
    }
  },
  "user_config": {
    "greeting": {"type": "string", "title": "Greeting", "description": "What to say",
                 "default": "hello"},
    "key": {"type": "string", "title": "Key", "description": "A key", "sensitive": true,
            "required": true}
  }
}"#;

fn bundle_bytes() -> Vec<u8> {
    zip(&[
        ("manifest.json", MANIFEST.as_bytes(), 0o100_644),
        ("server/run", b"#!/bin/sh\necho hi\n", 0o100_755),
        ("server/lib/data.txt", b"data", 0o100_644),
    ])
}

struct Place {
    root: PathBuf,
    options: DiscoveryOptions,
}

impl Place {
    fn new(name: &str) -> Place {
        let root = std::env::temp_dir().join(format!("mcp-bundle-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("project")).unwrap();
        let options = DiscoveryOptions {
            home: Some(root.join("home")),
            policy_file: Some(root.join("policy.json")),
            ..DiscoveryOptions::default()
        };
        Place { root, options }
    }
    /// The host's user file, and the directory bundles are unpacked in (beside it).
    fn user_file(&self) -> PathBuf {
        crate::config::ConfigWriter::new(&self.root.join("project"), &self.options)
            .path(Level::User)
            .to_path_buf()
    }
    fn bundles(&self) -> PathBuf {
        self.user_file().parent().unwrap().join("bundles")
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.root.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
    fn files(&self) -> Vec<String> {
        fn walk(dir: &Path, out: &mut Vec<String>, root: &Path) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out, root);
                } else {
                    out.push(p.strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut out, &self.root);
        out.sort();
        out
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn a_bundle_is_proposed_then_unpacked_and_written_once_approved() {
    let place = Place::new("add");
    let path = place.write("hello.mcpb", &bundle_bytes());
    let bundle = Bundle::open(&path, None).unwrap();
    assert_eq!((bundle.name(), bundle.version()), ("hello", "1.0.0"));
    assert_eq!(bundle.sha256(), digest(&bundle_bytes()));
    assert!(bundle.signature().is_none());
    let keys: Vec<String> = bundle.questions().into_iter().map(|q| q.key).collect();
    assert_eq!(keys, ["user_config:greeting", "user_config:key"]);

    let project = place.root.join("project");
    // A required answer missing.
    let e = bundle
        .propose(&BTreeMap::new(), &project, &place.options)
        .unwrap_err();
    assert!(e.to_string().contains("user_config:key"), "{e}");

    let answers = BTreeMap::from([("user_config:key".to_owned(), "${HELLO_KEY}".to_owned())]);
    let proposal = bundle.propose(&answers, &project, &place.options).unwrap();
    let dir = place.bundles().join("hello-1.0.0");
    let lines = proposal.lines();
    assert!(
        lines[0].starts_with("from: bundle hello 1.0.0 by Someone"),
        "{lines:?}"
    );
    assert!(lines[0].contains(bundle.sha256()) && lines[0].contains("unsigned"));
    assert!(lines[0].ends_with(&format!("unpacked to {}", dir.display())));
    let run = dir.join("server").join("run");
    // `${__dirname}/server/run` as the manifest writes it (a `/` on every platform).
    let shown_run = format!("{}/server/run", dir.display());
    assert!(
        lines[1] == format!("command: {shown_run} --greeting hello")
            || lines[1] == format!("command: '{shown_run}' --greeting hello"),
        "{lines:?}"
    );
    assert_eq!(proposal.config().env["KEY"], "${HELLO_KEY}");

    // Refused: nothing unpacked, nothing written.
    let before = place.files();
    assert_eq!(
        proposal
            .add(&project, &place.options, Level::User, |_| false)
            .unwrap(),
        None
    );
    assert_eq!(place.files(), before);

    // Approved: unpacked (the executable bit kept), then written.
    proposal
        .add(&project, &place.options, Level::User, |_| true)
        .unwrap();
    assert_eq!(std::fs::read(&run).unwrap(), b"#!/bin/sh\necho hi\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&run), 0o755);
        assert_eq!(mode(&dir.join("server/lib/data.txt")), 0o644);
        assert_eq!(mode(dir.parent().unwrap()) & 0o077, 0);
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("manifest.json")).unwrap(),
        MANIFEST
    );
}

#[test]
fn an_update_replaces_the_directory_at_once() {
    let place = Place::new("update");
    let project = place.root.join("project");
    let answers = BTreeMap::from([("user_config:key".to_owned(), "k".to_owned())]);
    let first = Bundle::open(&place.write("a.mcpb", &bundle_bytes()), None).unwrap();
    let dir = place.bundles().join("hello-1.0.0");
    let unpack = |b: &Bundle| Unpack {
        bundle: b.clone(),
        dir: dir.clone(),
    };
    unpack(&first).run().unwrap();
    std::fs::write(dir.join("stale.txt"), "left by hand").unwrap();
    let second = zip(&[
        ("manifest.json", MANIFEST.as_bytes(), 0o100_644),
        ("server/run", b"#!/bin/sh\necho new\n", 0o100_755),
    ]);
    let second = Bundle::open(&place.write("b.mcpb", &second), None).unwrap();
    unpack(&second).run().unwrap();
    assert_eq!(
        std::fs::read(dir.join("server/run")).unwrap(),
        b"#!/bin/sh\necho new\n"
    );
    assert!(!dir.join("stale.txt").exists() && !dir.join("server/lib").exists());
    // Nothing else is left beside it.
    let beside: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, [std::ffi::OsString::from("hello-1.0.0")]);
    let _ = (project, answers);
}

#[test]
fn a_changed_byte_an_escape_and_a_link_are_refused_with_nothing_written() {
    let place = Place::new("refused");
    let good = bundle_bytes();
    let sha = digest(&good);

    // A changed byte: the SHA-256 expected differs (and the entry's CRC-32 too).
    let mut changed = good.clone();
    let at = changed.windows(7).position(|w| w == b"echo hi").unwrap();
    changed[at] = b'E';
    let path = place.write("changed.mcpb", &changed);
    assert!(matches!(
        Bundle::open(&path, Some(&sha)),
        Err(Error::Integrity { .. })
    ));
    let unchecked = Bundle::open(&path, None).unwrap();
    let answers = BTreeMap::from([("user_config:key".to_owned(), "k".to_owned())]);
    let project = place.root.join("project");
    let proposal = unchecked
        .propose(&answers, &project, &place.options)
        .unwrap();
    let e = proposal
        .add(&project, &place.options, Level::User, |_| true)
        .unwrap_err();
    assert!(e.to_string().contains("CRC-32"), "{e}");
    assert!(!place.user_file().exists());
    assert!(!place.bundles().join("hello-1.0.0").exists());
    Bundle::open(&place.write("good.mcpb", &good), Some(&sha.to_uppercase())).unwrap();

    for (name, mode) in [("../outside.txt", 0o100_644), ("server/link", 0o120_777)] {
        let bytes = zip(&[
            ("manifest.json", MANIFEST.as_bytes(), 0o100_644),
            (name, b"/etc/passwd", mode),
        ]);
        let path = place.write("bad.mcpb", &bytes);
        let before = place.files();
        let e = Bundle::open(&path, None).unwrap_err();
        assert!(matches!(e, Error::Config { .. }), "{e}");
        assert_eq!(place.files(), before);
        assert!(!place.root.parent().unwrap().join("outside.txt").exists());
    }
    let no_manifest = zip(&[("server/run", b"x", 0o100_755)]);
    let e = Bundle::open(&place.write("none.mcpb", &no_manifest), None).unwrap_err();
    assert!(e.to_string().contains("no manifest.json"), "{e}");
}

#[test]
fn a_bundle_for_another_platform_is_refused() {
    let place = Place::new("platform");
    let other = if manifest::platform() == "win32" {
        "linux"
    } else {
        "win32"
    };
    let text = MANIFEST.replace(
        "\"user_config\"",
        &format!("\"compatibility\": {{\"platforms\": [\"{other}\"]}},\n  \"user_config\""),
    );
    let bytes = zip(&[("manifest.json", text.as_bytes(), 0o100_644)]);
    let bundle = Bundle::open(&place.write("other.mcpb", &bytes), None).unwrap();
    let answers = BTreeMap::from([("user_config:key".to_owned(), "k".to_owned())]);
    let e = bundle
        .propose(&answers, &place.root, &place.options)
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!("runs on {other} only")),
        "{e}"
    );
}
