//! MCP bundles (`.mcpb`, formerly DXT): a zip of a server and its `manifest.json`. A bundle is
//! read whole into memory and checked before anything is written: its SHA-256 against the one
//! expected, its signature block split off (and reported), every entry confined to the
//! bundle's directory with caps on entries, size and compression ratio, every entry's CRC-32,
//! the manifest (0.1 to 0.4) and whether it runs here (platform, runtime versions). Its
//! `user_config` are questions; the proposal unpacks it, once approved, to a private directory
//! keyed by name and version (an update replaces that directory at once), and runs its
//! `mcp_config` from there.

mod compat;
mod manifest;
mod zip;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{local_name, Proposal, Question};
use crate::config::{DiscoveryOptions, ServerConfig};
use crate::error::Error;
use crate::net::fetch::{Failure, Fetch};
use crate::net::target::TlsSettings;
use manifest::Manifest;

/// The largest bundle read (a server with its `node_modules` is tens of megabytes).
const MAX_BUNDLE: usize = 512 << 20;

/// How many redirects a download follows.
const MAX_REDIRECTS: usize = 5;

/// Where a redirect from `from` to `location` goes: an absolute http(s) URL (never from https
/// to http) or a path on the same origin; `None` for anything else.
fn redirected(from: &str, location: &str) -> Option<String> {
    let scheme_end = from.find("://")? + 3;
    let origin_end = from[scheme_end..]
        .find('/')
        .map_or(from.len(), |i| scheme_end + i);
    let next = if location.starts_with("http://") || location.starts_with("https://") {
        location.to_owned()
    } else if location.starts_with('/') && !location.starts_with("//") {
        format!("{}{location}", &from[..origin_end])
    } else {
        return None;
    };
    let downgrade = from.starts_with("https://") && next.starts_with("http://");
    (!downgrade && super::server_json::is_http_url(&next)).then_some(next)
}

/// How long a bundle's download may take.
const DOWNLOAD: Duration = Duration::from_secs(300);

/// An MCP bundle (`.mcpb`), read and checked: its manifest, its digest, its signature block,
/// and the questions its `user_config` asks. [`Bundle::propose`] gives the config that runs it
/// from the directory it is unpacked to once the user approved it.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use mcp_runtime::config::{DiscoveryOptions, Level};
/// use mcp_runtime::install::Bundle;
///
/// let bundle = Bundle::open("filesystem.mcpb".as_ref(), None)?;
/// println!("{} {} (SHA-256 {})", bundle.name(), bundle.version(), bundle.sha256());
/// let answers = BTreeMap::from([("user_config:allowed_directories".to_owned(), "/srv/docs".to_owned())]);
/// let options = DiscoveryOptions::default();
/// let cwd = std::env::current_dir()?;
/// let proposal = bundle.propose(&answers, &cwd, &options)?;
/// proposal.add(&cwd, &options, Level::User, |shown| {
///     shown.lines().iter().for_each(|l| println!("    {l}"));
///     true
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "mcpb")))]
#[derive(Clone)]
pub struct Bundle {
    /// The file as read (the zip, then any signature block).
    bytes: Arc<Vec<u8>>,
    /// How much of it is the zip.
    zip_len: usize,
    sha256: String,
    manifest: Manifest,
    /// Where it came from, as shown (a path, or a URL without its secrets).
    source: String,
}

impl std::fmt::Debug for Bundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundle")
            .field("name", &self.manifest.name)
            .field("version", &self.manifest.version)
            .field("sha256", &self.sha256)
            .field("signed", &self.signature().is_some())
            .field("source", &self.source)
            .finish()
    }
}

/// The SHA-256 of `bytes`, lower-case hex.
fn digest(bytes: &[u8]) -> String {
    crate::hex::hex(&Sha256::digest(bytes))
}

impl Bundle {
    /// Reads the bundle at `path`, checking it against `sha256` (hex) when one is given (a
    /// registry entry's `fileSha256`). A digest that differs is [`Error::Integrity`]; a file
    /// that is not a bundle, or one that breaks its rules (an entry outside its directory, a
    /// link, a zip bomb, a broken manifest) is [`Error::Config`] saying what.
    pub fn open(path: &Path, sha256: Option<&str>) -> Result<Bundle, Error> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| Error::io(format_args!("reading the bundle {shown}"), e);
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(Error::Config {
                message: format!("{shown}: not a file"),
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_BUNDLE as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() > MAX_BUNDLE {
            return Err(Error::Config {
                message: format!(
                    "{shown}: more than {MAX_BUNDLE} bytes (a bundle is at most that)"
                ),
            });
        }
        Bundle::from_bytes(bytes, sha256, shown)
    }

    /// Downloads the bundle at `url` (http or https, through the library's HTTP stack: the
    /// environment's proxy and CAs, at most 512 MiB, within five minutes) and checks it against
    /// `sha256` (hex) before anything else is read of it.
    pub fn download(url: &str, sha256: &str) -> Result<Bundle, Error> {
        let shown = crate::net::url::redact(url);
        if !super::server_json::is_http_url(url) {
            return Err(Error::Config {
                message: format!("{shown}: a bundle is downloaded over http or https"),
            });
        }
        let fetch = Fetch::new(MAX_BUNDLE, None, None, TlsSettings::default());
        let deadline = Instant::now() + DOWNLOAD;
        // Release downloads redirect (to a storage host): followed a few times, never from
        // https to http; nothing is sent but the GET (the digest checks what comes).
        let mut at = url.to_owned();
        let mut hops = 0;
        let response = loop {
            let shown_at = crate::net::url::redact(&at);
            let response = fetch
                .request("GET", &at, &[], None, deadline)
                .map_err(|f| match f {
                    Failure::Timeout => Error::Timeout {
                        method: format!("GET {shown_at}"),
                        after: DOWNLOAD,
                    },
                    Failure::TooLarge(n) => Error::Config {
                        message: format!(
                            "{shown_at}: more than {n} bytes (a bundle is at most that)"
                        ),
                    },
                    Failure::Other(why) => Error::Io {
                        message: format!("the bundle {shown_at} could not be downloaded: {why}"),
                        kind: None,
                    },
                })?;
            let location = response.header("location").map(str::to_owned);
            match (response.status, location) {
                (301 | 302 | 303 | 307 | 308, Some(location)) if hops < MAX_REDIRECTS => {
                    let next = redirected(&at, &location).ok_or_else(|| Error::Config {
                        message: format!(
                            "{shown_at} redirects to {}, which is not followed",
                            crate::net::url::redact(&location)
                        ),
                    })?;
                    at = next;
                    hops += 1;
                }
                _ => break response,
            }
        };
        if response.status != 200 {
            return Err(Error::Http {
                status: response.status,
                body: crate::text::clip(&String::from_utf8_lossy(&response.body), 200),
                www_authenticate: None,
            });
        }
        Bundle::from_bytes(response.body, Some(sha256), shown)
    }

    fn from_bytes(bytes: Vec<u8>, sha256: Option<&str>, source: String) -> Result<Bundle, Error> {
        let actual = digest(&bytes);
        if let Some(expected) = sha256 {
            if !actual.eq_ignore_ascii_case(expected.trim()) {
                return Err(Error::Integrity {
                    uri: source,
                    problem: format!("its SHA-256 is {actual}, not the {expected} expected"),
                });
            }
        }
        let bad = |why: String| Error::Config {
            message: format!("{source}: {why}"),
        };
        let (zip_part, _) = zip::split_signature(&bytes).map_err(bad)?;
        let zip_len = zip_part.len();
        let archive = zip::Archive::read(zip_part).map_err(bad)?;
        let entry = archive
            .find("manifest.json")
            .ok_or_else(|| bad("has no manifest.json at its top".into()))?;
        let text = archive.contents(entry).map_err(bad)?;
        let text = String::from_utf8(text).map_err(|_| bad("manifest.json is not UTF-8".into()))?;
        let manifest = Manifest::parse(&text).map_err(bad)?;
        Ok(Bundle {
            bytes: Arc::new(bytes),
            zip_len,
            sha256: actual,
            manifest,
            source,
        })
    }

    /// Its name, as its manifest gives it.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Its version.
    pub fn version(&self) -> &str {
        &self.manifest.version
    }

    /// Its display name, when it has one.
    pub fn display_name(&self) -> Option<&str> {
        self.manifest.display_name.as_deref()
    }

    /// What it does, in its author's words.
    pub fn description(&self) -> &str {
        &self.manifest.description
    }

    /// Its author's name.
    pub fn author(&self) -> &str {
        &self.manifest.author.name
    }

    /// The SHA-256 of the whole file, lower-case hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The signature a signed bundle carries (`mcpb sign`: a DER PKCS#7, detached, over the
    /// zip before it), as it is: this library does not verify it. `None` when unsigned.
    pub fn signature(&self) -> Option<&[u8]> {
        let (_, signature) = zip::split_signature(&self.bytes).ok()?;
        signature
    }

    /// What its `user_config` asks (key `user_config:KEY`, in key order): required ones,
    /// secret (`sensitive`) ones, a `multiple` one's answer one value per line, defaults with
    /// the user's folders filled in.
    pub fn questions(&self) -> Vec<Question> {
        self.manifest.questions(&crate::files::home_dir())
    }

    /// The config that runs it with `answers` (keyed by [`Question::key`]), from the directory
    /// it will be unpacked to (`bundles/<name>-<version>` in the host's user directory,
    /// `~/.mcp-runtime`), as a [`Proposal`]: nothing is unpacked until [`Proposal::add`] is
    /// approved. A bundle for another platform or for a runtime version not installed, a
    /// required answer missing, or an answer of the wrong type is [`Error::Config`] naming
    /// each.
    pub fn propose(
        &self,
        answers: &BTreeMap<String, String>,
        cwd: &Path,
        options: &DiscoveryOptions,
    ) -> Result<Proposal, Error> {
        let who = format!("{} {}", self.manifest.name, self.manifest.version);
        let mut problems = compat::problems(&self.manifest);
        let home = options.home.clone().unwrap_or_else(crate::files::home_dir);
        let values = match self.manifest.values(answers, &home) {
            Ok(values) => values,
            Err(more) => {
                problems.extend(more);
                BTreeMap::new()
            }
        };
        if !problems.is_empty() {
            return Err(Error::Config {
                message: format!("{who}: {}", problems.join("; ")),
            });
        }
        let user_file = options.host.user_file(&options.context(cwd));
        let bundles = user_file
            .parent()
            .map(|d| d.join("bundles"))
            .unwrap_or_else(|| PathBuf::from("bundles"));
        let dir = bundles.join(format!(
            "{}-{}",
            local_name(&self.manifest.name),
            local_name(&self.manifest.version)
        ));
        let filled = self
            .manifest
            .command(&dir, &values, &home)
            .map_err(|problems| Error::Config {
                message: format!("{who}: {}", problems.join("; ")),
            })?;
        let mut warnings = filled.warnings;
        if let Some(other) = self.unpacked_other(&dir) {
            warnings.push(format!(
                "{} holds another bundle of the same name and version (SHA-256 {other}); \
                 adding this one replaces it, under every server that runs from there",
                dir.display()
            ));
        }
        let config = ServerConfig {
            command: Some(filled.command),
            args: filled.args,
            env: filled.env,
            cwd: Some(dir.display().to_string()),
            ..ServerConfig::default()
        };
        let signed = match self.signature() {
            Some(_) => "signed, the signature not verified",
            None => "unsigned",
        };
        let from = format!(
            "bundle {who} by {} ({}; SHA-256 {}, {signed}), unpacked to {}",
            self.manifest.author.name,
            self.source,
            self.sha256,
            dir.display()
        );
        let unpack = Unpack {
            bundle: self.clone(),
            dir,
        };
        Ok(Proposal::new(local_name(&self.manifest.name), config)?
            .from(from, warnings)
            .unpacking(Arc::new(unpack)))
    }
}

/// The file in an unpacked bundle's directory that says which bundle it holds (its SHA-256).
const UNPACKED_DIGEST: &str = ".mcpb-sha256";

impl Bundle {
    /// The SHA-256 of another bundle already unpacked in `dir`, if one is.
    fn unpacked_other(&self, dir: &Path) -> Option<String> {
        let there = std::fs::read_to_string(dir.join(UNPACKED_DIGEST)).ok()?;
        let there = there.trim();
        (there != self.sha256).then(|| crate::text::clip(there, 64))
    }
}

/// The unpacking a bundle's proposal does once approved.
#[derive(Debug)]
pub(crate) struct Unpack {
    bundle: Bundle,
    dir: PathBuf,
}

impl Unpack {
    /// Unpacks the bundle into a new directory beside its place, then puts it in place at
    /// once (an older unpacking of the same name and version is replaced, and removed).
    pub(crate) fn run(&self) -> Result<(), Error> {
        let io = |what: &str, path: &Path, e: std::io::Error| {
            Error::io(format_args!("{what} {}", path.display()), e)
        };
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        crate::files::private_dir(parent, true)
            .map_err(|e| io("creating the directory", parent, e))?;
        #[cfg(unix)]
        {
            // One made earlier by someone else's umask is made private too.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io("making private", parent, e))?;
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let unique = format!(
            "{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fresh = parent.join(format!(".{base}.new-{unique}"));
        let result = self.write_into(&fresh).and_then(|()| {
            if !self.dir.exists() {
                return std::fs::rename(&fresh, &self.dir)
                    .map_err(|e| io("putting in place", &self.dir, e));
            }
            let old = parent.join(format!(".{base}.old-{unique}"));
            std::fs::rename(&self.dir, &old).map_err(|e| io("moving aside", &self.dir, e))?;
            if let Err(e) = std::fs::rename(&fresh, &self.dir) {
                let _ = std::fs::rename(&old, &self.dir);
                return Err(io("putting in place", &self.dir, e));
            }
            let _ = std::fs::remove_dir_all(&old);
            Ok(())
        });
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&fresh);
        }
        result
    }

    /// Every file of the bundle under `root` (a new directory), with its executable bit.
    fn write_into(&self, root: &Path) -> Result<(), Error> {
        let io = |what: &str, path: &Path, e: std::io::Error| {
            Error::io(format_args!("{what} {}", path.display()), e)
        };
        crate::files::private_dir(root, false).map_err(|e| io("creating", root, e))?;
        let zip_bytes = &self.bundle.bytes[..self.bundle.zip_len];
        let bad = |why: String| Error::Config {
            message: format!("{}: {why}", self.bundle.source),
        };
        let archive = zip::Archive::read(zip_bytes).map_err(bad)?;
        for entry in &archive.entries {
            let contents = archive.contents(entry).map_err(bad)?;
            // The path was checked: relative, no `..`; every part a plain name.
            let path = entry
                .path
                .split('/')
                .fold(root.to_path_buf(), |p, part| p.join(part));
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| io("creating", dir, e))?;
            }
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(if entry.executable { 0o755 } else { 0o644 });
            }
            use std::io::Write;
            let mut file = options.open(&path).map_err(|e| io("writing", &path, e))?;
            file.write_all(&contents)
                .map_err(|e| io("writing", &path, e))?;
        }
        // Ours, whatever the bundle held under that name.
        let mark = root.join(UNPACKED_DIGEST);
        std::fs::write(&mark, &self.bundle.sha256).map_err(|e| io("writing", &mark, e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[test]
fn a_redirect_is_followed_to_http_urls_only_and_never_down_to_http() {
    let from = "https://releases.example/o/r/v1/x.mcpb";
    assert_eq!(
        redirected(from, "https://objects.example/a?sig=1").as_deref(),
        Some("https://objects.example/a?sig=1")
    );
    assert_eq!(
        redirected(from, "/o/r/v2/x.mcpb").as_deref(),
        Some("https://releases.example/o/r/v2/x.mcpb")
    );
    assert_eq!(redirected(from, "http://objects.example/a"), None);
    assert_eq!(redirected(from, "file:///etc/passwd"), None);
    assert_eq!(redirected(from, "//evil.example/a"), None);
    assert_eq!(redirected(from, "relative/x"), None);
    assert!(redirected("http://a.example/x", "https://b.example/y").is_some());
}
