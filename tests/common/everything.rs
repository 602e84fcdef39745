//! The third-party reference server `@modelcontextprotocol/server-everything` (npm), installed
//! into the ignored `.interop/` folder (by `.ci/run`, or here on first use).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The version the interop tests pin.
pub const VERSION: &str = "2026.8.31";

/// The server's entry script, or `None` (said loudly) when node is not installed.
pub fn entry_script() -> Option<PathBuf> {
    static ENTRY: OnceLock<Option<PathBuf>> = OnceLock::new();
    ENTRY.get_or_init(install).clone()
}

fn install() -> Option<PathBuf> {
    if !super::npm::has_node() {
        return super::npm::missing(
            "node is not installed; the server-everything interop tests did not run",
        );
    }
    super::npm::install(
        "",
        &[&format!(
            "@modelcontextprotocol/server-everything@{VERSION}"
        )],
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// server-everything running over HTTP (`streamableHttp` or `sse`) on a free loopback port, or
/// on a Unix socket. Dropping it kills it.
pub struct HttpEverything {
    child: std::process::Child,
    port: u16,
    /// What it prints on stdout (a line per request it receives, among others).
    stdout: crossbeam_channel::Receiver<String>,
}

/// Sends each line `from` gives to a channel.
fn lines_of(from: impl std::io::Read + Send + 'static) -> crossbeam_channel::Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(from).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

impl HttpEverything {
    /// Starts it, or `None` (said loudly) without node. Waits (bounded) until it listens.
    pub fn start(mode: &str) -> Option<HttpEverything> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        HttpEverything::start_on(mode, port)
    }

    /// [`HttpEverything::start`] on a given port (a restart: the same URL, a new process that
    /// knows none of the old one's sessions).
    pub fn start_on(mode: &str, port: u16) -> Option<HttpEverything> {
        HttpEverything::spawn(mode, &port.to_string(), port)
    }

    /// Streamable HTTP on the Unix socket at `path` (Node listens on a path given as its port).
    pub fn start_on_socket(path: &std::path::Path) -> Option<HttpEverything> {
        HttpEverything::spawn("streamableHttp", path.to_str().unwrap(), 0)
    }

    fn spawn(mode: &str, listen: &str, port: u16) -> Option<HttpEverything> {
        let script = entry_script()?;
        let mut child = Command::new("node")
            .arg(&script)
            .arg(mode)
            .env("PORT", listen)
            // Keep its URL-fetching tool from ever reaching outside this machine.
            .env("GZIP_ALLOWED_DOMAINS", "127.0.0.1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start node");
        let stdout = lines_of(child.stdout.take().unwrap());
        let rx = lines_of(child.stderr.take().unwrap());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match rx.recv_deadline(deadline) {
                Ok(line) if line.contains(listen) => break,
                Ok(_) => continue,
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("server-everything {mode} did not start listening");
                }
            }
        }
        Some(HttpEverything {
            child,
            port,
            stdout,
        })
    }

    /// Waits (bounded) until it prints a line containing `text`; the lines before it are gone.
    pub fn wait_for_line(&self, text: &str) -> Result<String, String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            match self.stdout.recv_deadline(deadline) {
                Ok(line) if line.contains(text) => return Ok(line),
                Ok(_) => continue,
                Err(_) => return Err(format!("no line with {text:?} in time")),
            }
        }
    }

    /// The Streamable HTTP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The legacy SSE endpoint.
    pub fn sse_url(&self) -> String {
        format!("http://127.0.0.1:{}/sse", self.port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
