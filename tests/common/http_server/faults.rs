//! The test HTTP server's fault behaviours: redirects, silent and slow streams, streams cut
//! every time, server requests on a call's stream, a full accept queue, a killed server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Value};

use super::{event, respond, start_stream, State, TestHttp};

impl TestHttp {
    /// Stops accepting connections and fills the accept queue, so that a new connection hangs
    /// in its TCP handshake (as with a server whose backlog is full). Connections already open
    /// are still served.
    pub fn stop_accepting(&self) {
        let s = &self.state;
        *s.paused.0.lock().unwrap() = true;
        // A backlog of one; the acceptor is woken by a connection it drops, then waits.
        assert_eq!(unsafe { libc::listen(s.listen_fd, 1) }, 0);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], s.port));
        let _ = TcpStream::connect(addr);
        let mut fillers = s.fillers.lock().unwrap();
        for _ in 0..64 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                Ok(c) => fillers.push(c),
                // The queue is full: SYNs are dropped now.
                Err(_) => return,
            }
        }
        panic!("the accept queue never filled");
    }

    /// Kills the server: stops listening (new connections are refused) and resets every open
    /// connection.
    pub fn kill(&mut self) {
        let s = &self.state;
        s.stop.store(true, Ordering::SeqCst);
        s.end_legacy.store(true, Ordering::SeqCst);
        s.paused.1.notify_all();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], s.port));
        let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
        if let Some(a) = self.acceptor.take() {
            a.join().unwrap();
        }
        for c in s.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        s.fillers.lock().unwrap().clear();
    }

    /// Resets every open connection (the server carries on: new ones are served, unless it
    /// stopped accepting).
    pub fn drop_connections(&self) {
        for c in self.state.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }

    /// `tools/call` streams held open right now.
    pub fn open_streams(&self) -> usize {
        self.state.open_streams.load(Ordering::SeqCst)
    }

    /// Server requests (`ask_roots_in_calls`) sent so far.
    pub fn server_requests(&self) -> usize {
        self.state.server_requests.load(Ordering::SeqCst)
    }
}

/// Counts a held `tools/call` stream while alive.
pub(super) struct OpenStream<'a>(&'a State);

impl<'a> OpenStream<'a> {
    pub(super) fn new(s: &'a State) -> OpenStream<'a> {
        s.open_streams.fetch_add(1, Ordering::SeqCst);
        OpenStream(s)
    }
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Holds a connection open, sending nothing, until the client closes it or the server stops.
pub(super) fn hold_silent(s: &State, out: &TcpStream) {
    let _open = OpenStream::new(s);
    let Ok(mut probe) = out.try_clone() else {
        return;
    };
    let _ = probe.set_read_timeout(Some(Duration::from_millis(50)));
    let mut byte = [0u8; 64];
    while !s.stop.load(Ordering::SeqCst) {
        match probe.read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// A `tools/call` answered by one of the fault behaviours: `Some(keep the connection)`.
pub(super) fn call(
    s: &State,
    out: &mut TcpStream,
    headers: &[(&str, String)],
    reply: &Value,
) -> Option<bool> {
    let b = &s.behaviour;
    if let Some((status, location)) = &b.redirect_calls {
        return Some(respond(out, *status, &[("Location", location.clone())], ""));
    }
    if b.silent_calls {
        start_stream(out, headers);
        let _ = out.write_all(b"id: e1\ndata:\n\n");
        hold_silent(s, out);
        return Some(false);
    }
    if let Some(delay) = b.slow_head {
        let _open = OpenStream::new(s);
        std::thread::sleep(delay);
        let reply = reply.to_string();
        let pad = 600;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            pad + reply.len()
        );
        if out.write_all(head.as_bytes()).is_err() {
            return Some(false);
        }
        for _ in 0..pad {
            if s.stop.load(Ordering::SeqCst) || out.write_all(b" ").is_err() {
                return Some(false);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        return Some(out.write_all(reply.as_bytes()).is_ok());
    }
    if b.cut_every_call {
        s.resumed.lock().unwrap().push(reply.clone());
        start_stream(out, headers);
        let _ = out.write_all(b"id: e1\nretry: 5\ndata:\n\n");
        return Some(false);
    }
    if b.ask_roots_in_calls {
        start_stream(out, headers);
        let n = s.server_requests.fetch_add(1, Ordering::SeqCst);
        let ask = json!({"jsonrpc": "2.0", "id": format!("srv-{n}"), "method": "roots/list"});
        event(out, None, None, &ask.to_string());
        match s.answers.1.recv_timeout(Duration::from_secs(10)) {
            Ok(a) if a.get("id") == ask.get("id") => {
                event(out, None, None, &reply.to_string());
            }
            _ => {}
        }
        return Some(false);
    }
    None
}
