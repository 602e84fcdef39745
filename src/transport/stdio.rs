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
//!
//! The parts: this file starts the server and is the [`Transport`]; `teardown` ends it;
//! `stderr` drains and keeps stderr; `pipes` turns the pipes' bytes into messages and says
//! how reading ended; `reader` (Unix) decides who reads, the io thread or a leading caller,
//! by the state machine in `lead`; `salvage` finds the id in a reply that cannot be parsed.
//!
//! Locks: the reader's `pipes` is held by whoever reads, across its wait on the server; under
//! it the sink's locks, the stderr tail's, the process's and the reader's `lead` are taken
//! (`pipes` before `lead`, never the other way: see `reader`). Nothing is locked under `lead`,
//! the stdin writer's lock or the stderr tail's. `phase` (the teardown) is taken with `pipes`
//! released.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::process::{own_process_group, ServerProcess};
use super::sandbox::{self, Sandbox};
use super::stdin::{Lost, StdinWriter};
use super::{Envelope, Inbound, Transport};
use crate::error::Error;
use crate::jsonrpc::Message;
use crate::panic::Boundary;
use noise::Noise;
use stderr::StderrTail;
use teardown::Phase;

#[cfg(target_os = "linux")]
mod guardian;
#[cfg(unix)]
mod lead;
pub(crate) mod noise;
mod pipes;
// Windows' lookup of a program (`npx` is `npx.cmd`); plain, so tested everywhere.
#[cfg(any(windows, test))]
mod program;
#[cfg(unix)]
mod reader;
pub(crate) mod salvage;
mod stderr;
mod teardown;

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
    /// The program (looked up in `PATH` when it has no slash; on Windows with each extension
    /// of `PATHEXT`, so `npx` finds `npx.cmd`, which runs through `cmd.exe`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set on top of this process's environment.
    pub env: Vec<(String, String)>,
    /// The working directory (default: this process's).
    pub cwd: Option<PathBuf>,
    /// Run the server in an operating-system sandbox with these rules (see [`Sandbox`]); it
    /// does not start where the sandbox cannot be applied. Its environment is then `env` on
    /// top of a small default set, not all of this process's.
    pub sandbox: Option<Sandbox>,
}

impl std::fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("cwd", &self.cwd)
            .field("sandbox", &self.sandbox)
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
            sandbox: None,
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

/// A running stdio server. Dropping it closes it.
pub struct StdioTransport {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    process: Arc<ServerProcess>,
    stdin: Arc<StdinWriter>,
    tail: StderrTail,
    /// What stdout had that was not JSON-RPC before the first message.
    noise: Noise,
    grace: Duration,
    close_requested: AtomicBool,
    /// The server closed its stdin and did not exit: requests fail as they are written.
    stdin_gone: AtomicBool,
    /// Where failed requests are reported.
    inbound: Arc<dyn Inbound>,
    phase: Mutex<Phase>,
    phase_changed: Condvar,
    /// A sandboxed server's proxy and temporary directory, ended after the process.
    sandbox: Mutex<Option<sandbox::Guard>>,
    #[cfg(unix)]
    reader: reader::Reader,
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
        let confined = match &command.sandbox {
            Some(rules) => Some(sandbox::prepare(name, rules, &command.env).map_err(
                |message| Error::Sandbox {
                    server: name.to_owned(),
                    message,
                },
            )?),
            None => None,
        };
        let mut cmd = match &confined {
            Some(confined) => confined.command(program(command), &command.args),
            None => {
                let mut cmd = Command::new(program(command));
                cmd.args(&command.args)
                    .envs(command.env.iter().map(|(k, v)| (k, v)));
                cmd
            }
        };
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        own_process_group(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| match confined {
            Some(_) => spawn_error(format!(
                "{}: {e} (while starting it in the sandbox)",
                command.program
            )),
            None => spawn_error(format!("{}: {e}", command.program)),
        })?;
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
                Box::new(move |lost| {
                    let Some(shared) = me.upgrade() else { return };
                    match lost {
                        Lost::Request(id) => {
                            shared.write_failed(id, &Error::closed("the server's stdin is closed"))
                        }
                        Lost::Writer(e) => shared.panicked(e),
                    }
                })
            }),
            tail: StderrTail::new(options.stderr_tail_lines),
            noise: Noise::new(&command.env),
            grace: options.close_grace,
            close_requested: AtomicBool::new(false),
            stdin_gone: AtomicBool::new(false),
            inbound: Arc::clone(&inbound),
            phase: Mutex::new(Phase::Running),
            phase_changed: Condvar::new(),
            sandbox: Mutex::new(None),
            #[cfg(unix)]
            reader: reader::Reader::new(stdout, stderr, options.max_message_bytes, inbound),
        });
        let transport = StdioTransport {
            shared: Arc::clone(&shared),
        };
        if let Some(confined) = confined {
            // On failure, dropping `transport` stops the process.
            // A panic in the proxy ends the connection, as one in its other threads does.
            let me = Arc::downgrade(&shared);
            let failed = Arc::new(move |e: Error| {
                if let Some(shared) = me.upgrade() {
                    shared.panicked(e);
                }
            });
            let guard = confined.started(failed).map_err(|message| Error::Sandbox {
                server: name.to_owned(),
                message,
            })?;
            *shared.sandbox.lock() = Some(guard);
        }
        // If a thread cannot be started, dropping `transport` tears the process down.
        let s = Arc::clone(&shared);
        #[cfg(unix)]
        thread(&shared, "io", Boundary::StdioReader, move || {
            s.reader.run(&s)
        })
        .map_err(spawn_error)?;
        #[cfg(not(unix))]
        {
            let max = options.max_message_bytes;
            thread(&shared, "stderr", Boundary::StdioStderr, move || {
                stderr::drain(&s, stderr)
            })
            .map_err(&spawn_error)?;
            let s = Arc::clone(&shared);
            thread(&shared, "reader", Boundary::StdioReader, move || {
                pipes::read_loop(&s, stdout, max, inbound)
            })
            .map_err(&spawn_error)?;
        }
        Ok(transport)
    }
}

/// What to start: on Windows, the file the command shell would run (see `program`).
fn program(command: &StdioCommand) -> PathBuf {
    #[cfg(windows)]
    {
        let cwd = command
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let found = program::find(
            &command.program,
            program::variable(&command.env, "PATH").as_deref(),
            program::variable(&command.env, "PATHEXT").as_deref(),
            &cwd,
            &|p| p.is_file(),
        );
        if let Some(found) = found {
            return found;
        }
    }
    PathBuf::from(&command.program)
}

/// Starts one of the connection's threads; a panic in it ends the connection (see
/// [`Shared::panicked`]).
fn thread(
    shared: &Arc<Shared>,
    role: &str,
    at: Boundary,
    f: impl FnOnce() + Send + 'static,
) -> Result<(), String> {
    let failed = Arc::clone(shared);
    crate::panic::spawn(format!("mcp-{}-{role}", shared.name), at, f, move |e| {
        failed.panicked(e)
    })
    .map(|_| ())
    .map_err(|e| format!("cannot start the {role} thread: {e}"))
}

impl Transport for StdioTransport {
    // stdio has no headers: the envelope says only how the sender waits.
    fn send(&self, message: &Message, envelope: &Envelope) -> Result<(), Error> {
        #[cfg(unix)]
        if let Some(deadline) = envelope.deadline {
            return self
                .shared
                .reader
                .send(&self.shared, message, deadline, envelope.inline);
        }
        #[cfg(not(unix))]
        let _ = envelope;
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

    fn close(&self) {
        self.shared.close_requested.store(true, Ordering::SeqCst);
        self.shared.shutdown();
        #[cfg(unix)]
        self.shared.reader.wake();
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.shared.tail.lines()
    }

    fn skipped_stdout(&self) -> Option<(usize, String)> {
        self.shared.noise.report()
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
