//! A real TLS server in front of a test server: a certificate authority made by the test with
//! the `openssl` command, and Debian's `socat` terminating TLS (OpenSSL's) on a free loopback
//! port and passing the bytes to the plain HTTP server behind it; optionally asking every
//! client for a certificate signed by a second CA of the test's. Stopped on drop.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The certificates and keys of one test, in a directory of their own.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    /// A server CA (`ca.pem`) and a certificate for `localhost` and `127.0.0.1` signed by it
    /// (`server.pem`, `server.key`); a client CA (`client-ca.pem`), a client certificate
    /// signed by it (`client.pem`, `client.key`) and the same key encrypted
    /// (`client-encrypted.key`, pass phrase `s3cret`); a CA nobody trusts (`other-ca.pem`). Or
    /// `None` (said loudly) without `openssl`; in CI that fails the test.
    pub fn generate(name: &str) -> Option<Pki> {
        if !installed("openssl", "version") {
            return super::npm::missing("openssl is not installed (apt-get install openssl)");
        }
        let dir = super::temp_dir(&format!("pki-{name}"));
        let pki = Pki { dir };
        pki.ca("ca", "Test Server CA");
        pki.ca("client-ca", "Test Client CA");
        pki.ca("other-ca", "Nobody's CA");
        pki.leaf(
            "server",
            "ca",
            "localhost",
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        );
        pki.leaf(
            "client",
            "client-ca",
            "test client",
            "extendedKeyUsage=clientAuth\n",
        );
        pki.openssl(&[
            "pkey",
            "-in",
            "client.key",
            "-out",
            "client-encrypted.key",
            "-aes256",
            "-passout",
            "pass:s3cret",
        ]);
        Some(pki)
    }

    /// A client certificate made by the common recipe, without an extension file: an X.509
    /// v1 certificate (`client-v1.pem`, key `client-v1.key`), which TLS clients refuse to show.
    pub fn v1_client(&self) {
        self.new_key("client-v1", "test client v1", &[], "csr");
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            "client-v1.csr",
            "-CA",
            "client-ca.pem",
            "-CAkey",
            "client-ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "client-v1.pem",
        ]);
    }

    /// A file of this PKI.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn ca(&self, name: &str, subject: &str) {
        self.new_key(name, subject, &["-x509", "-days", "3"], "pem");
    }

    fn leaf(&self, name: &str, ca: &str, subject: &str, extensions: &str) {
        let ext = format!("{name}.ext");
        std::fs::write(
            self.dir.join(&ext),
            format!("basicConstraints=CA:FALSE\n{extensions}"),
        )
        .unwrap();
        self.new_key(name, subject, &[], "csr");
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &format!("{name}.pem"),
        ]);
    }

    /// `openssl req -new` with a new P-256 key (`<name>.key`, unencrypted) for `subject`,
    /// `extra` arguments, and its output in `<name>.<out>` (a certificate with `-x509`, else a
    /// request).
    fn new_key(&self, name: &str, subject: &str, extra: &[&str], out: &str) {
        let (subject, key, out) = (
            format!("/CN={subject}"),
            format!("{name}.key"),
            format!("{name}.{out}"),
        );
        let mut args = vec!["req", "-new"];
        args.extend(extra);
        args.extend([
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ]);
        args.extend(["-subj", &subject, "-keyout", &key, "-out", &out]);
        self.openssl(&args);
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn installed(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `socat` serving TLS on a loopback port and passing each connection to `backend`.
pub struct TlsFront {
    child: Child,
    port: u16,
}

impl TlsFront {
    /// Starts one with `pki`'s server certificate in front of `127.0.0.1:<backend>`; with
    /// `client_certificates`, a client must show a certificate signed by the client CA. Or
    /// `None` (said loudly) without `socat`; in CI that fails the test.
    pub fn start(pki: &Pki, backend: u16, client_certificates: bool) -> Option<TlsFront> {
        if !installed("socat", "-V") {
            return super::npm::missing("socat is not installed (apt-get install socat)");
        }
        let verify = if client_certificates {
            format!("verify=1,cafile={}", pki.file("client-ca.pem").display())
        } else {
            "verify=0".to_owned()
        };
        // A free port can be taken between our probe and socat's bind: try a few.
        for _ in 0..5 {
            let port = free_port();
            let listen = format!(
                "OPENSSL-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork,cert={},key={},{verify}",
                pki.file("server.pem").display(),
                pki.file("server.key").display(),
            );
            let mut child = Command::new("socat")
                .arg(listen)
                .arg(format!("TCP:127.0.0.1:{backend}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("socat starts");
            if wait_listening(port, &mut child) {
                return Some(TlsFront { child, port });
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("socat did not start");
    }

    /// `https://<host>:<port><path>`.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        // socat forks a child per connection: end the whole group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Whether the process listens on `port` within a bound (false if it exited).
fn wait_listening(port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The port of a loopback URL (`http://127.0.0.1:<port>/...`).
pub fn port_of(url: &str) -> u16 {
    let rest = url.split_once("127.0.0.1:").expect("a loopback URL").1;
    rest.split('/').next().unwrap().parse().unwrap()
}
