//! The socket under an HTTP connection: TCP, or a Unix domain socket for a server that listens
//! on a path (`unix:///path/to/server.sock`, as VS Code's configs say; see `url::local`). Both
//! are read and written the same way, with the same timeouts, liveness probe and shutdown.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// A connected stream socket.
#[derive(Debug)]
pub(crate) enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Socket {
    /// Connects to the Unix socket at `path`. Connecting to a local socket does not wait on a
    /// network: it succeeds, or fails at once (no listener, a full backlog, no such file).
    #[cfg(unix)]
    pub(crate) fn unix(path: &std::path::Path) -> io::Result<Socket> {
        std::os::unix::net::UnixStream::connect(path).map(Socket::Unix)
    }

    /// On a system without Unix sockets, the error that says so.
    #[cfg(not(unix))]
    pub(crate) fn unix(_path: &std::path::Path) -> io::Result<Socket> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "Unix domain sockets are not available on this system",
        ))
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_read_timeout(t),
            #[cfg(unix)]
            Socket::Unix(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.set_write_timeout(t),
            #[cfg(unix)]
            Socket::Unix(s) => s.set_write_timeout(t),
        }
    }

    /// Ends both directions: a read or write blocked on it returns.
    pub(crate) fn shut(&self) {
        let _ = match self {
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
            #[cfg(unix)]
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
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
        let Socket::Tcp(stream) = self;
        let mut byte = [0u8; 1];
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let idle =
            matches!(stream.peek(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        stream.set_nonblocking(false).is_ok() && idle
    }
}

impl Read for &Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => (&*s).read(buf),
            #[cfg(unix)]
            Socket::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => (&*s).write(buf),
            #[cfg(unix)]
            Socket::Unix(s) => (&*s).write(buf),
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
