//! A real forward proxy for the tests: Debian's `tinyproxy`, on a free loopback port with a
//! config of the test's own (the packaged one allows `CONNECT` to ports 443 and 563 only, and
//! tinyproxy cannot listen on port 0), optionally asking for Basic credentials. Its log says
//! which requests went through it. Stopped on drop.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running tinyproxy.
pub struct Tinyproxy {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Tinyproxy {
    /// Starts one (with `credentials`, it answers `407` without them), or `None` (said loudly)
    /// where tinyproxy is not installed; in CI a missing tinyproxy fails the test.
    pub fn start(name: &str, credentials: Option<(&str, &str)>) -> Option<Tinyproxy> {
        let installed = Command::new("tinyproxy")
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !installed {
            return super::npm::missing("tinyproxy is not installed (apt-get install tinyproxy)");
        }
        let dir = super::temp_dir(&format!("tinyproxy-{name}"));
        // A free port can be taken between our probe and tinyproxy's bind: try a few.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let log = dir.join("tinyproxy.log");
            let _ = std::fs::remove_file(&log);
            let mut config = format!(
                "Port {port}\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nMaxClients 50\n\
                 LogFile \"{}\"\nLogLevel Info\nDisableViaHeader Yes\n",
                log.display()
            );
            if let Some((user, password)) = credentials {
                config.push_str(&format!("BasicAuth {user} {password}\n"));
            }
            let conf = dir.join("tinyproxy.conf");
            std::fs::write(&conf, config).unwrap();
            let mut child = Command::new("tinyproxy")
                .arg("-d")
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("tinyproxy starts");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(Tinyproxy { child, port, dir });
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            let _ = child.wait();
            eprintln!("tinyproxy did not start on {port}: {stderr}");
        }
        panic!("tinyproxy did not start");
    }

    /// `http://127.0.0.1:<port>`, with `credentials` in it when given.
    pub fn url(&self, credentials: Option<(&str, &str)>) -> String {
        match credentials {
            Some((user, password)) => format!("http://{user}:{password}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("tinyproxy.log")).unwrap_or_default()
    }

    /// The requests it was asked (`CONNECT 127.0.0.1:5000 HTTP/1.1`, ...), one per line of its
    /// log (its other lines, connections included, are not requests).
    pub fn requests(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains("Request ("))
            .filter_map(|l| l.split_once("): "))
            .map(|(_, request)| request.to_owned())
            .collect()
    }

    /// Whether it was asked to tunnel to `127.0.0.1:<port>` (`CONNECT`, for https), waiting
    /// (bounded) for the log line: tinyproxy writes it as the request comes.
    pub fn tunnelled_to(&self, port: u16) -> bool {
        self.asked(&format!("CONNECT 127.0.0.1:{port} "))
    }

    /// Whether it was given a request for `http://127.0.0.1:<port>/...` to forward (plain
    /// http, absolute-form), waiting (bounded) for the log line.
    pub fn forwarded_to(&self, port: u16) -> bool {
        self.asked(&format!(" http://127.0.0.1:{port}/"))
    }

    /// Whether a request line it logged contains `wanted`, waiting (bounded) for it.
    fn asked(&self, wanted: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if self.requests().iter().any(|r| r.contains(wanted)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
