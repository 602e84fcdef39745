//! The socket under an HTTP connection: TCP, or a local one for a server that listens on a
//! Unix socket's path (`unix:///path/to/server.sock`) or a Windows named pipe
//! (`pipe:///pipe/name`), as VS Code's configs name them (see `url::local`). All are read and
//! written the same way, with the same timeouts, liveness probe and shutdown.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// A connected stream socket.
#[derive(Debug)]
pub(crate) enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
    #[cfg(windows)]
    Pipe(super::named_pipe::Pipe),
}

/// Where a local server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Local {
    /// A Unix socket's path.
    Unix(std::path::PathBuf),
    /// A Windows named pipe's name (`\\.\pipe\name`).
    Pipe(String),
}

impl Local {
    /// Where it is, as shown.
    pub(crate) fn shown(&self) -> String {
        match self {
            Local::Unix(path) => path.display().to_string(),
            Local::Pipe(name) => name.clone(),
        }
    }
}

impl Socket {
    /// Connects to a local server. A Unix socket does not wait on a network: it connects, or
    /// fails at once (no listener, a full backlog, no such file); a named pipe whose instances
    /// are all busy is tried again until `deadline`.
    pub(crate) fn local(local: &Local, deadline: Option<std::time::Instant>) -> io::Result<Socket> {
        let _ = deadline;
        match local {
            #[cfg(unix)]
            Local::Unix(path) => std::os::unix::net::UnixStream::connect(path).map(Socket::Unix),
            #[cfg(windows)]
            Local::Pipe(name) => super::named_pipe::Pipe::open(name, deadline).map(Socket::Pipe),
            #[allow(unreachable_patterns, reason = "one of the two is this system's")]
            other => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                match other {
                    Local::Unix(_) => "Unix domain sockets are not available on this system",
                    Local::Pipe(_) => "named pipes are Windows', not this system's",
                },
            )),
        }
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_read_timeout(t),
            #[cfg(unix)]
            Socket::Unix(s) => s.set_read_timeout(t),
            #[cfg(windows)]
            Socket::Pipe(p) => {
                p.set_read_timeout(t);
                Ok(())
            }
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_write_timeout(t),
            #[cfg(unix)]
            Socket::Unix(s) => s.set_write_timeout(t),
            #[cfg(windows)]
            Socket::Pipe(p) => {
                p.set_write_timeout(t);
                Ok(())
            }
        }
    }

    /// Ends both directions: a read or write blocked on it returns.
    pub(crate) fn shut(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            #[cfg(unix)]
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
            #[cfg(windows)]
            Socket::Pipe(p) => {
                p.shutdown();
                Ok(())
            }
        };
    }

    /// What it is connected to, for `Debug`.
    pub(crate) fn peer(&self) -> String {
        match self {
            Socket::Tcp(s) => s.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string()),
            #[cfg(unix)]
            Socket::Unix(s) => s
                .peer_addr()
                .ok()
                .and_then(|a| a.as_pathname().map(|p| p.display().to_string()))
                .unwrap_or_else(|| "a Unix socket".into()),
            #[cfg(windows)]
            Socket::Pipe(p) => p.name().to_owned(),
        }
    }

    /// Whether nothing waits to be read on an idle kept-alive connection: data means the server
    /// sent something unasked, end of stream or an error means it is gone.
    #[cfg(unix)]
    pub(crate) fn is_idle(&self) -> bool {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Unix(s) => s.as_raw_fd(),
        };
        let mut byte = 0u8;
        // SAFETY: a one-byte peek into a local buffer on a socket we own; it never blocks.
        let n = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
    }

    /// See the Unix version.
    #[cfg(not(unix))]
    pub(crate) fn is_idle(&self) -> bool {
        let stream = match self {
            Socket::Tcp(stream) => stream,
            #[cfg(windows)]
            Socket::Pipe(p) => return p.is_idle(),
        };
        let mut byte = [0u8; 1];
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let idle =
            matches!(stream.peek(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        stream.set_nonblocking(false).is_ok() && idle
    }
}

/// Reads from a stream that is read through a shared reference (`&TcpStream`, `&UnixStream`).
fn read_from(mut stream: impl Read, buf: &mut [u8]) -> io::Result<usize> {
    stream.read(buf)
}

/// Writes to a stream that is written through a shared reference.
fn write_to(mut stream: impl Write, buf: &[u8]) -> io::Result<usize> {
    stream.write(buf)
}

impl Read for &Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => read_from(s, buf),
            #[cfg(unix)]
            Socket::Unix(s) => read_from(s, buf),
            #[cfg(windows)]
            Socket::Pipe(p) => p.read(buf),
        }
    }
}

impl Write for &Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => write_to(s, buf),
            #[cfg(unix)]
            Socket::Unix(s) => write_to(s, buf),
            #[cfg(windows)]
            Socket::Pipe(p) => p.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ureq::unversioned::transport::ShutdownHandle for Socket {
    fn shutdown(&self) {
        self.shut();
    }
}
