//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Per server, named threads that no caller ever waits on:
//! - `mcp-<server>-io` waits on stdout and stderr at once (`poll`). A caller that needs neither
//!   cancellation nor progress and finds nobody else waiting reads its own answer instead, while
//!   the io thread parks (see `reader`): one thread hop less per call. Stdout lines become
//!   messages handed to the [`Inbound`] sink; blank lines, a BOM, a trailing `\r` and lines
//!   that are not JSON-RPC (banners) are skipped and logged at `debug`; a line longer than
//!   `max_message_bytes` closes the connection with [`Error::MessageTooLarge`] without ever
//!   being buffered whole. Stderr is drained line by line (each logged at `debug` under the
//!   target `mcp::<server>::stderr`, the last lines kept for error messages), so a chatty
//!   server never blocks on a full pipe; once stdout ends, `mcp-<server>-stderr` takes over
//!   stderr for the teardown.
//! - stdin is written by the caller while the pipe takes it, and by `mcp-<server>-writer`
//!   (started only when the pipe is full) otherwise, so [`Transport::send`] never blocks.
//!
//! Close: stdin is closed, the server gets [`CLOSE_GRACE`] to exit, then its whole process
//! group gets SIGTERM, another [`CLOSE_GRACE`], then SIGKILL, and close waits (at most
//! [`KILL_WAIT`]) until the server is reaped and no process of its group is left. Close and drop
//! return only then. Waiting for the exit needs no thread (it polls the process's pidfd).
//!
//! When stdout ends (the server exited, or closed it and lingers), the connection ends at once:
//! every pending call fails with [`Error::TransportClosed`] saying why, then the process is
//! torn down as at close.
//!
//! On Linux a host killed outright (SIGKILL, a crash) leaves no server behind either: see
//! `guardian`.

use std::collections::VecDeque;
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::lines::{read_line_capped, trim_line, LineRead};
use super::process::{own_process_group, ServerProcess};
use super::stdin::StdinWriter;
#[cfg(unix)]
use super::SendHint;
use super::{Inbound, Transport};
use crate::jsonrpc::Message;
use crate::Error;

#[cfg(target_os = "linux")]
mod guardian;
#[cfg(unix)]
mod reader;
mod salvage;

/// How long a server gets to exit after its stdin closes, and again after SIGTERM to its
/// process group, before SIGKILL (the default of [`StdioOptions::close_grace`]).
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// After SIGKILL, how long a close waits for the server and its process group to be gone
/// (it is reaped within this; only a process stuck in the kernel can outlast it).
pub const KILL_WAIT: Duration = super::process::KILL_WAIT;

/// How to start a stdio server. (Its `Debug` shows the names of the environment variables,
/// never their values: they may be resolved secrets.)
#[derive(Clone, Default, PartialEq)]
pub struct StdioCommand {
    /// The program (looked up in `PATH` when it has no slash).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set on top of this process's environment.
    pub env: Vec<(String, String)>,
    /// The working directory (default: this process's).
    pub cwd: Option<PathBuf>,
}

impl std::fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl StdioCommand {
    /// A command with arguments and no extra environment.
    pub fn new<I, S>(program: impl Into<String>, args: I) -> StdioCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        StdioCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        }
    }
}

/// Limits and timings of a stdio connection.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The longest stdout line (one message) accepted; longer closes the connection.
    pub max_message_bytes: usize,
    /// How long the server gets to exit after stdin closes, and again after SIGTERM
    /// (default [`CLOSE_GRACE`]). A close takes at most twice this plus [`KILL_WAIT`].
    pub close_grace: Duration,
    /// How many stderr lines to keep for error messages.
    pub stderr_tail_lines: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_message_bytes: 64 * 1024 * 1024,
            close_grace: CLOSE_GRACE,
            stderr_tail_lines: 64,
        }
    }
}

/// Longest stderr line kept; the rest of a longer line is dropped.
const STDERR_LINE_CAP: usize = 16 * 1024;
/// How long the reader waits, after the process exited, for stderr to be drained.
const STDERR_SETTLE: Duration = Duration::from_millis(250);
/// After stdout ended (or stdin broke): how long the server's exit status is awaited, to say
/// "exited (status)" rather than "closed its stdout" when it is exiting anyway.
const EXIT_SETTLE: Duration = Duration::from_millis(100);

/// A running stdio server. Dropping it closes it.
pub struct StdioTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    process: Arc<ServerProcess>,
    stdin: Arc<StdinWriter>,
    tail: StderrTail,
    grace: Duration,
    close_requested: AtomicBool,
    /// The server closed its stdin and did not exit: requests fail as they are written.
    stdin_gone: AtomicBool,
    /// Where failed requests are reported.
    inbound: Arc<dyn Inbound>,
    phase: Mutex<Phase>,
    phase_changed: Condvar,
    #[cfg(unix)]
    reader: reader::Reader,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    ShuttingDown,
    Done,
}

impl StdioTransport {
    /// Starts the server and the transport's threads. Messages from the server go to `inbound`.
    pub fn spawn(
        name: &str,
        command: &StdioCommand,
        options: &StdioOptions,
        inbound: Arc<dyn Inbound>,
    ) -> Result<StdioTransport, Error> {
        let spawn_error = |message: String| Error::Spawn {
            server: name.to_owned(),
            message,
        };
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        own_process_group(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| spawn_error(format!("{}: {e}", command.program)))?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => unreachable!("all three pipes were requested"),
            };
        #[cfg(target_os = "linux")]
        guardian::watch(child.id());
        let process = Arc::new(ServerProcess::new(child));
        let shared = Arc::new_cyclic(|me: &std::sync::Weak<Shared>| Shared {
            name: name.to_owned(),
            process: Arc::clone(&process),
            stdin: StdinWriter::new(name, stdin, {
                let me = me.clone();
                Box::new(move |id| {
                    if let Some(shared) = me.upgrade() {
                        shared.write_failed(id, &Error::closed("the server's stdin is closed"));
                    }
                })
            }),
            tail: StderrTail::new(options.stderr_tail_lines),
            grace: options.close_grace,
            close_requested: AtomicBool::new(false),
            stdin_gone: AtomicBool::new(false),
            inbound: Arc::clone(&inbound),
            phase: Mutex::new(Phase::Running),
            phase_changed: Condvar::new(),
            #[cfg(unix)]
            reader: reader::Reader::new(stdout, stderr, options.max_message_bytes, inbound),
        });
        let transport = StdioTransport {
            shared: Arc::clone(&shared),
        };
        // If a thread cannot be started, dropping `transport` tears the process down.
        let s = Arc::clone(&shared);
        #[cfg(unix)]
        thread(name, "io", move || s.reader.run(&s)).map_err(&spawn_error)?;
        #[cfg(not(unix))]
        {
            let max = options.max_message_bytes;
            thread(name, "stderr", move || drain_stderr(&s, stderr)).map_err(&spawn_error)?;
            let s = Arc::clone(&shared);
            thread(name, "reader", move || read_loop(&s, stdout, max, inbound))
                .map_err(&spawn_error)?;
        }
        Ok(transport)
    }

    /// The server's process id (its process group id too, on Unix).
    pub fn pid(&self) -> u32 {
        self.shared.process.pid()
    }
}

fn thread(name: &str, role: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(format!("mcp-{name}-{role}"))
        .spawn(f)
        .map(|_| ())
        .map_err(|e| format!("cannot start the {role} thread: {e}"))
}

impl Transport for StdioTransport {
    fn send(&self, message: &Message) -> Result<(), Error> {
        let id = match message {
            Message::Request(r) => r.id.as_i64(),
            _ => None,
        };
        let sent = self.shared.stdin.send(&message.to_line(), id).map(|_| ());
        #[cfg(not(unix))]
        if let (Err(e), Some(id)) = (&sent, id) {
            self.shared.write_failed(id, e);
        }
        sent
    }

    #[cfg(unix)]
    fn send_with(&self, message: &Message, hint: &SendHint) -> Result<(), Error> {
        self.shared
            .reader
            .send(&self.shared, message, hint.deadline, hint.inline)
    }

    fn close(&self) {
        self.shared.close_requested.store(true, Ordering::SeqCst);
        self.shared.shutdown();
        #[cfg(unix)]
        self.shared.reader.wake();
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.shared.tail.lines()
    }

    fn kind(&self) -> &'static str {
        "stdio"
    }

    fn pid(&self) -> Option<u32> {
        Some(self.shared.process.pid())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    /// Closes stdin and escalates until the process is gone. The first caller does the work;
    /// concurrent callers wait for it (bounded).
    fn shutdown(&self) {
        {
            let mut phase = self.phase.lock();
            match *phase {
                Phase::Done => return,
                Phase::ShuttingDown => {
                    let deadline =
                        Instant::now() + self.grace * 2 + KILL_WAIT + Duration::from_secs(1);
                    while *phase != Phase::Done {
                        if self
                            .phase_changed
                            .wait_until(&mut phase, deadline)
                            .timed_out()
                        {
                            return;
                        }
                    }
                    return;
                }
                Phase::Running => *phase = Phase::ShuttingDown,
            }
        }
        // Closes stdin once whatever is queued is written.
        self.stdin.close();
        let gone = self.process.terminate(self.grace);
        #[cfg(target_os = "linux")]
        if gone {
            guardian::forget(self.process.pid());
        }
        #[cfg(not(target_os = "linux"))]
        let _ = gone;
        *self.phase.lock() = Phase::Done;
        self.phase_changed.notify_all();
    }

    /// Why the connection ended, for the error every pending request gets.
    fn closed_error(&self, read_error: Option<std::io::Error>) -> Error {
        if self.close_requested.load(Ordering::SeqCst) {
            return Error::closed("the connection was closed");
        }
        // A server that ends its stdout is usually exiting: a moment for its status (and its
        // last stderr lines). One that lingers is reported as such, without waiting longer.
        let status = self.process.wait_exit(Instant::now() + EXIT_SETTLE);
        let reason = match (status, read_error) {
            (_, Some(e)) => format!("reading the server's stdout failed: {e}"),
            (Some(status), None) => format!("the server process exited ({status})"),
            (None, None) => "the server closed its stdout (the process was still running; it \
                             is stopped)"
                .to_owned(),
        };
        if status.is_some() {
            self.process
                .wait_stderr_done(Instant::now() + STDERR_SETTLE);
        }
        Error::TransportClosed {
            reason,
            stderr_tail: self.tail.lines(),
        }
    }
}

impl Shared {
    /// Writing request `id` to stdin failed. When the server is exiting, the reader fails the
    /// request with the exit's reason; when it closed its stdin and lives on, nothing would
    /// ever answer: the request fails now.
    fn write_failed(&self, id: i64, error: &Error) {
        if self.close_requested.load(Ordering::SeqCst) {
            return;
        }
        if !self.stdin_gone.load(Ordering::SeqCst) {
            if self
                .process
                .wait_exit(Instant::now() + EXIT_SETTLE)
                .is_some()
            {
                return;
            }
            self.stdin_gone.store(true, Ordering::SeqCst);
            log::debug!("[{}] the server closed its stdin: {error}", self.name);
        }
        self.inbound.on_request_failed(
            &crate::jsonrpc::RequestId::Number(id),
            Error::TransportClosed {
                reason: "the server closed its stdin (the request could not be written)".to_owned(),
                stderr_tail: self.tail.lines(),
            },
        );
    }
}

/// How reading stdout ended.
type ReadOutcome = Result<(), Option<std::io::Error>>;

/// Reads what a non-blocking pipe has now, handing each chunk to `on_bytes` (which returns
/// false to stop). `Some(Ok)` at EOF, `Some(Err)` on a read error, `None` when it would block.
#[cfg(unix)]
fn read_available(
    pipe: &mut impl Read,
    chunk: &mut [u8],
    on_bytes: &mut dyn FnMut(&[u8]) -> bool,
) -> Option<std::io::Result<()>> {
    loop {
        match pipe.read(chunk) {
            Ok(0) => return Some(Ok(())),
            Ok(n) => {
                // A short read took all there was: back to poll, which says when there is more
                // (this saves a read that would only say "would block").
                if !on_bytes(&chunk[..n]) || n < chunk.len() {
                    return None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Some(Err(e)),
        }
    }
}

#[cfg(unix)]
fn set_nonblocking(fd: std::os::fd::RawFd, on: bool) {
    // SAFETY: fcntl on a descriptor the caller owns, changing only O_NONBLOCK.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            let flags = if on {
                flags | libc::O_NONBLOCK
            } else {
                flags & !libc::O_NONBLOCK
            };
            libc::fcntl(fd, libc::F_SETFL, flags);
        }
    }
}

#[cfg(not(unix))]
fn read_loop(shared: &Shared, stdout: impl Read, max: usize, inbound: Arc<dyn Inbound>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let outcome = loop {
        match read_line_capped(&mut reader, &mut buf, max, false) {
            Ok(LineRead::Line) => dispatch_line(shared, &buf, &*inbound, &mut |_| {}),
            Ok(LineRead::Eof) => {
                dispatch_line(shared, &buf, &*inbound, &mut |_| {});
                break Ok(());
            }
            Ok(LineRead::TooLong) => break Err(None),
            Err(e) => break Err(Some(e)),
        }
    };
    drop(reader);
    finish(shared, outcome, max, inbound);
}

/// After stdout ended: stop the process and tell the sink why the connection ended.
fn finish(shared: &Shared, outcome: ReadOutcome, max: usize, inbound: Arc<dyn Inbound>) {
    match outcome {
        Err(None) => {
            log::warn!(
                "[{}] the server sent a message over {max} bytes; closing the connection",
                shared.name
            );
            inbound.on_closed(Error::MessageTooLarge { limit: max });
            shared.shutdown();
        }
        // The connection ends first (pending calls fail now, with the reason); the teardown,
        // which may take the grace periods, comes after.
        Ok(()) => {
            inbound.on_closed(shared.closed_error(None));
            shared.shutdown();
        }
        Err(Some(e)) => {
            inbound.on_closed(shared.closed_error(Some(e)));
            shared.shutdown();
        }
    }
}

/// Parses one stdout line and hands its messages to `inbound`; the id of each response is shown
/// to `seen` first. A line that cannot be parsed but is recognisably the response to one of our
/// requests (invalid UTF-8 in a string, nested deeper than the parser goes) fails that request
/// with [`Error::Protocol`] instead of leaving it to its timeout; other such lines are skipped.
fn dispatch_line(shared: &Shared, raw: &[u8], inbound: &dyn Inbound, seen: &mut dyn FnMut(i64)) {
    let line = trim_line(raw);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match Message::parse(line) {
        Ok(messages) => {
            for m in messages {
                if let Message::Response(r) = &m {
                    if let Some(id) = r.id.as_ref().and_then(|id| id.as_i64()) {
                        seen(id);
                    }
                }
                inbound.on_message(m);
            }
        }
        Err(e) => match salvage::response_id(line) {
            Some(id) => {
                log::debug!(
                    "[{}] the response to request {id} cannot be parsed ({e}): {}",
                    shared.name,
                    preview(line)
                );
                seen(id);
                inbound.on_request_failed(
                    &crate::jsonrpc::RequestId::Number(id),
                    Error::protocol(format!("the response could not be parsed: {e}")),
                );
            }
            None => log::debug!(
                "[{}] skipping a stdout line that is {e}: {}",
                shared.name,
                preview(line)
            ),
        },
    }
}

fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]);
    if line.len() > 200 {
        format!("{text}…")
    } else {
        text.into_owned()
    }
}

fn drain_stderr(shared: &Shared, stderr: impl Read) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::with_capacity(1024);
    loop {
        let res = read_line_capped(&mut reader, &mut buf, STDERR_LINE_CAP, true);
        let done = !matches!(res, Ok(LineRead::Line) | Ok(LineRead::TooLong));
        if !(done && buf.is_empty()) {
            stderr_line(shared, &buf, matches!(res, Ok(LineRead::TooLong)));
        }
        if done {
            break;
        }
    }
    shared.process.mark_stderr_done();
}

/// One stderr line: logged at `debug` under `mcp::<server>::stderr`, and kept in the tail.
fn stderr_line(shared: &Shared, raw: &[u8], truncated: bool) {
    let mut line = String::from_utf8_lossy(trim_line(raw)).into_owned();
    if truncated {
        line.push('…');
    }
    if log::log_enabled!(log::Level::Debug) {
        let target = format!("mcp::{}::stderr", shared.name);
        log::debug!(target: &target, "[{}] {line}", shared.name);
    }
    shared.tail.push(line);
}

/// The last lines of stderr, bounded.
struct StderrTail {
    cap: usize,
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn new(cap: usize) -> StderrTail {
        StderrTail {
            cap,
            lines: Mutex::new(VecDeque::with_capacity(cap.min(64))),
        }
    }

    fn push(&self, line: String) {
        if self.cap == 0 {
            return;
        }
        let mut lines = self.lines.lock();
        if lines.len() == self.cap {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }
}
