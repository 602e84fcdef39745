//! MCP bundles through the `mcp` command: the reference filesystem server packed by the
//! official packer (`mcpb pack`, from npm) is added and runs; signed by it (`mcpb sign`), it
//! opens and its signature is reported; with a changed byte it fails its SHA-256 check; a
//! bundle with a `../` entry or a link (made by Python's zipfile, as a hostile packer would)
//! is refused, and nothing is written, inside its directory or out.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::registry::{listed, TestRegistry};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The official packer.
const MCPB: &str = "@anthropic-ai/mcpb@2.1.2";

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn sha256(path: &Path) -> String {
    use std::fmt::Write;
    Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

struct Place {
    root: PathBuf,
}

impl Place {
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn mcp(&self, args: &[&str]) -> Output {
        let mut cmd = common::cli(&self.home());
        cmd.arg("--cwd").arg(self.root.join("project")).args(args);
        common::npm::output_within(cmd, Duration::from_secs(120)).expect("mcp finished")
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The packer's command line, run with node.
fn mcpb(cli: &Path, args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new("node");
    cmd.arg(cli).args(args).current_dir(cwd);
    common::npm::output_within(cmd, Duration::from_secs(120)).expect("mcpb finished")
}

/// server-filesystem's bundle, packed by the official packer from its installed tree.
fn packed(root: &Path) -> Option<(PathBuf, PathBuf)> {
    if !common::npm::has_node() {
        return common::npm::missing("node is not installed: bundles of a node server cannot run");
    }
    let cli = common::npm::install(
        "mcpb",
        &[MCPB],
        "node_modules/@anthropic-ai/mcpb/dist/cli/cli.js",
    )?;
    let entry = common::npm::server_filesystem()?;
    // .interop/filesystem/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
    let modules = entry.ancestors().nth(4).unwrap().to_path_buf();
    let source = root.join("source");
    std::fs::create_dir_all(&source).unwrap();
    let copied = Command::new("cp")
        .arg("-R")
        .arg(&modules)
        .arg(source.join("node_modules"))
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::write(
        source.join("manifest.json"),
        include_str!("data/bundle/filesystem.json"),
    )
    .unwrap();
    let out = mcpb(&cli, &["pack", "source", "filesystem.mcpb"], root);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    Some((root.join("filesystem.mcpb"), cli))
}

#[test]
fn a_bundle_from_the_official_packer_is_added_runs_and_a_changed_one_is_refused() {
    let place = Place {
        root: common::temp_dir("cli-bundle"),
    };
    let Some((bundle, cli)) = packed(&place.root) else {
        return;
    };
    // Inside the project: the CLI answers roots/list with it, which the server then takes as
    // its allowed directories.
    let docs = place.root.join("project/docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("note.txt"), "bundled hello").unwrap();
    let user_file = place.home().join(".mcp-runtime/mcp.json");
    let bundles = place.home().join(".mcp-runtime/bundles");
    let set = format!("user_config:allowed_directories={}", docs.display());
    let path = bundle.display().to_string();
    let digest = sha256(&bundle);

    // A changed byte: its SHA-256 is not the one expected; nothing is unpacked or written.
    let changed = place.root.join("changed.mcpb");
    let mut bytes = std::fs::read(&bundle).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&changed, &bytes).unwrap();
    let out = place.mcp(&[
        "add",
        &changed.display().to_string(),
        "--sha256",
        &digest,
        "--yes",
        "--set",
        &set,
    ]);
    assert_eq!(out.status.code(), Some(65), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("SHA-256"),
        "{}",
        text(&out.stderr)
    );
    assert!(!user_file.exists() && !bundles.exists());

    // The packer's bundle, checked against its digest: shown, then added to the user's file.
    let out = place.mcp(&[
        "add", &path, "--sha256", &digest, "--scope", "user", "--yes", "--set", &set,
    ]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    let dir = bundles.join("filesystem-2026.8.31");
    assert!(
        shown.contains(&format!(
            "from: bundle filesystem 2026.8.31 by mcp-runtime tests ({path}; SHA-256 {digest}, unsigned), unpacked to {}",
            dir.display()
        )),
        "{shown}"
    );
    let index = dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        shown.contains(&format!(
            "command: node {} {}",
            index.display(),
            docs.display()
        )),
        "{shown}"
    );
    // What was shown is what was written.
    let listing = text(&place.mcp(&["servers"]).stdout);
    let line = |t: &str| {
        t.lines()
            .find(|l| l.trim_start().starts_with("command: "))
            .map(str::trim)
            .map(str::to_owned)
    };
    assert_eq!(line(&listing), line(&shown), "{listing}");

    // And it runs.
    let out = place.mcp(&[
        "call",
        "mcp_filesystem_read_text_file",
        &format!("path={}", docs.join("note.txt").display()),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("bundled hello"),
        "{}",
        text(&out.stdout)
    );

    // From a registry whose entry is the bundle: downloaded, checked against the entry's
    // fileSha256, then proposed the same way; a digest that differs stops it.
    let files = TestRegistry::start(Vec::new());
    let url = files.serve_file("filesystem.mcpb", std::fs::read(&bundle).unwrap());
    let entry = |name: &str, sha: &str| {
        let document = json!({
            "name": format!("io.github.example/{name}"),
            "description": "The reference filesystem server, bundled",
            "version": "2026.8.31",
            "packages": [{"registryType": "mcpb", "identifier": url, "fileSha256": sha,
                          "transport": {"type": "stdio"}}]
        });
        listed(&document.to_string(), "active", true)
    };
    let wrong = format!("{:0>64}", "0");
    let registry =
        TestRegistry::start(vec![entry("fs-bundle", &digest), entry("fs-wrong", &wrong)]);
    let out = place.mcp(&[
        "add",
        "io.github.example/fs-bundle",
        "--registry",
        &registry.url,
        "--scope",
        "user",
        "--as",
        "fs-registry",
        "--yes",
        "--set",
        &set,
    ]);
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    assert!(
        shown.contains(&format!("({url}; SHA-256 {digest}, unsigned)")),
        "{shown}"
    );
    let out = place.mcp(&[
        "add",
        "io.github.example/fs-wrong",
        "--registry",
        &registry.url,
        "--scope",
        "user",
        "--as",
        "fs-wrong",
        "--yes",
        "--set",
        &set,
    ]);
    assert_eq!(out.status.code(), Some(65), "{}", text(&out.stderr));
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert!(written["mcpServers"].get("fs-wrong").is_none());

    // Signed by the packer: it opens, and the signature is reported (not verified).
    let signed = place.root.join("signed.mcpb");
    std::fs::copy(&bundle, &signed).unwrap();
    let out = mcpb(&cli, &["sign", "signed.mcpb", "--self-signed"], &place.root);
    if out.status.success() {
        let out = place.mcp(&[
            "add",
            &signed.display().to_string(),
            "--as",
            "signed",
            "--set",
            &set,
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("signed, the signature not verified"),
            "{}",
            text(&out.stdout)
        );
    } else {
        // It makes its certificate with openssl.
        common::npm::missing::<()>(&format!("mcpb sign failed: {}", text(&out.stderr)));
    }
}

/// A zip made by Python's zipfile: a manifest and one hostile entry (`link` makes it a
/// symbolic link to `target`).
fn hostile(path: &Path, name: &str, link: bool) -> bool {
    let script = format!(
        r#"
import zipfile, sys
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("manifest.json", open(sys.argv[2]).read())
    info = zipfile.ZipInfo({name:?})
    if {link}:
        info.create_system = 3
        info.external_attr = 0o120777 << 16
    z.writestr(info, "/etc/passwd" if {link} else "escaped")
"#,
        link = if link { "True" } else { "False" }
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bundle/filesystem.json");
    Command::new("python3")
        .args(["-c", &script])
        .arg(path)
        .arg(manifest)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_bundle_with_an_entry_out_of_its_directory_or_a_link_is_refused_with_nothing_written() {
    let place = Place {
        root: common::temp_dir("cli-bundle-hostile"),
    };
    std::fs::create_dir_all(place.root.join("project")).unwrap();
    for (name, entry, link) in [
        ("dotdot.mcpb", "../../escaped.txt", false),
        ("absolute.mcpb", "/tmp/escaped.txt", false),
        ("link.mcpb", "node_modules/evil", true),
    ] {
        let path = place.root.join(name);
        if !hostile(&path, entry, link) {
            common::npm::missing::<()>("python3 could not make a zip: the test cannot run");
            return;
        }
        let before = files(&place.root);
        let out = place.mcp(&[
            "add",
            &path.display().to_string(),
            "--yes",
            "--set",
            "user_config:allowed_directories=/tmp",
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let why = if link {
            "symbolic link"
        } else {
            "inside the bundle"
        };
        assert!(err.contains(why) || err.contains("leaves"), "{name}: {err}");
        assert!(err.lines().count() == 1, "{err}");
        // Nothing new anywhere under the place (the home and its bundles included), nor
        // beside it.
        let after: Vec<PathBuf> = files(&place.root)
            .into_iter()
            .filter(|p| !p.starts_with("home/.cache"))
            .collect();
        assert_eq!(after, before, "{name}");
        assert!(!place.root.parent().unwrap().join("escaped.txt").exists());
    }
}
