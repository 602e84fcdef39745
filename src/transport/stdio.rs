//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! Named threads per server, none of which a caller ever waits on:
//! - `mcp-<server>-reader` parses stdout lines and hands each message to the [`Inbound`] sink;
//!   blank lines, a BOM, a trailing `\r` and lines that are not JSON-RPC (banners) are skipped
//!   and logged at `debug`; a line longer than `max_message_bytes` closes the connection with
//!   [`Error::MessageTooLarge`] without ever being buffered whole;
//! - stdin is written by the caller while the pipe takes it, and by `mcp-<server>-writer`
//!   (started only when the pipe is full) otherwise, so [`Transport::send`] never blocks;
//! - `mcp-<server>-stderr` drains stderr line by line (each logged at `debug` under the target
//!   `mcp::<server>::stderr`, the last lines kept for error messages), so a chatty server never
//!   blocks on a full pipe;
//!
//! Close: stdin is closed, the server gets a grace period to exit, then its whole process group
//! gets SIGTERM, another grace period, then SIGKILL. The process is always reaped; waiting for
//! its exit needs no thread (it polls the process's pidfd).

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
use super::{Inbound, Transport};
use crate::jsonrpc::Message;
use crate::Error;

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
    /// How long the server gets to exit after stdin closes, and again after SIGTERM.
    pub close_grace: Duration,
    /// How many stderr lines to keep for error messages.
    pub stderr_tail_lines: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            max_message_bytes: 64 * 1024 * 1024,
            close_grace: Duration::from_secs(2),
            stderr_tail_lines: 64,
        }
    }
}

/// Longest stderr line kept; the rest of a longer line is dropped.
const STDERR_LINE_CAP: usize = 16 * 1024;
/// How long the reader waits, after the process exited, for stderr to be drained.
const STDERR_SETTLE: Duration = Duration::from_millis(250);

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
    phase: Mutex<Phase>,
    phase_changed: Condvar,
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
        let process = Arc::new(ServerProcess::new(child));
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            process: Arc::clone(&process),
            stdin: StdinWriter::new(name, stdin),
            tail: StderrTail::new(options.stderr_tail_lines),
            grace: options.close_grace,
            close_requested: AtomicBool::new(false),
            phase: Mutex::new(Phase::Running),
            phase_changed: Condvar::new(),
        });
        let transport = StdioTransport {
            shared: Arc::clone(&shared),
        };
        // If a thread cannot be started, dropping `transport` tears the process down.
        let s = Arc::clone(&shared);
        thread(name, "stderr", move || drain_stderr(&s, stderr)).map_err(&spawn_error)?;
        let s = Arc::clone(&shared);
        let max = options.max_message_bytes;
        thread(name, "reader", move || read_loop(&s, stdout, max, inbound))
            .map_err(&spawn_error)?;
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
        self.shared.stdin.send(&message.to_line())
    }

    fn close(&self) {
        self.shared.close_requested.store(true, Ordering::SeqCst);
        self.shared.shutdown();
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
                    let deadline = Instant::now() + self.grace * 2 + Duration::from_secs(2);
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
        self.process.terminate(self.grace);
        *self.phase.lock() = Phase::Done;
        self.phase_changed.notify_all();
    }

    /// Why the connection ended, for the error every pending request gets.
    fn closed_error(&self, read_error: Option<std::io::Error>) -> Error {
        if self.close_requested.load(Ordering::SeqCst) {
            return Error::closed("the connection was closed");
        }
        let reason = match (self.process.exit_status(), read_error) {
            (_, Some(e)) => format!("reading the server's stdout failed: {e}"),
            (Some(status), None) => format!("the server process exited ({status})"),
            (None, None) => "the server closed its stdout".to_owned(),
        };
        self.process
            .wait_stderr_done(Instant::now() + STDERR_SETTLE);
        Error::TransportClosed {
            reason,
            stderr_tail: self.tail.lines(),
        }
    }
}

fn read_loop(shared: &Shared, stdout: impl Read, max: usize, inbound: Arc<dyn Inbound>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let outcome = loop {
        match read_line_capped(&mut reader, &mut buf, max, false) {
            Ok(LineRead::Line) => dispatch_line(shared, &buf, &*inbound),
            Ok(LineRead::Eof) => {
                dispatch_line(shared, &buf, &*inbound);
                break Ok(());
            }
            Ok(LineRead::TooLong) => break Err(None),
            Err(e) => break Err(Some(e)),
        }
    };
    drop(reader);
    match outcome {
        Err(None) => {
            log::warn!(
                "[{}] the server sent a message over {max} bytes; closing the connection",
                shared.name
            );
            inbound.on_closed(Error::MessageTooLarge { limit: max });
            shared.shutdown();
        }
        Ok(()) => {
            shared.shutdown();
            inbound.on_closed(shared.closed_error(None));
        }
        Err(Some(e)) => {
            shared.shutdown();
            inbound.on_closed(shared.closed_error(Some(e)));
        }
    }
}

fn dispatch_line(shared: &Shared, raw: &[u8], inbound: &dyn Inbound) {
    let line = trim_line(raw);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match Message::parse(line) {
        Ok(messages) => {
            for m in messages {
                inbound.on_message(m);
            }
        }
        Err(e) => log::debug!(
            "[{}] skipping a stdout line that is {e}: {}",
            shared.name,
            preview(line)
        ),
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
    let target = format!("mcp::{}::stderr", shared.name);
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::with_capacity(1024);
    loop {
        let res = read_line_capped(&mut reader, &mut buf, STDERR_LINE_CAP, true);
        let done = !matches!(res, Ok(LineRead::Line) | Ok(LineRead::TooLong));
        if !(done && buf.is_empty()) {
            let mut line = String::from_utf8_lossy(trim_line(&buf)).into_owned();
            if matches!(res, Ok(LineRead::TooLong)) {
                line.push('…');
            }
            log::debug!(target: &target, "[{}] {line}", shared.name);
            shared.tail.push(line);
        }
        if done {
            break;
        }
    }
    shared.process.mark_stderr_done();
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
