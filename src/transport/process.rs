//! The server process: its own process group, exit watching, and a bounded teardown that
//! leaves nothing behind (no zombie, no orphaned grandchild).

use std::process::{Child, Command, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A spawned server process, watched by a thread that reaps it.
pub(crate) struct ServerProcess {
    pid: u32,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    exit: Option<ExitStatus>,
    stderr_done: bool,
}

/// Asks the command to start the child in a new process group (so signals reach its
/// grandchildren too, and a terminal's job control does not reach it).
pub(crate) fn own_process_group(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = command;
}

impl ServerProcess {
    /// Takes ownership of `child` and starts the thread that waits for (and reaps) it.
    pub(crate) fn watch(mut child: Child, name: &str) -> std::io::Result<Arc<ServerProcess>> {
        let process = Arc::new(ServerProcess {
            pid: child.id(),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let watcher = Arc::clone(&process);
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{name}-wait"))
            .spawn(move || {
                let status = child.wait();
                let mut st = watcher.state.lock();
                // `wait` only fails if the child was already reaped; report it as a failure.
                st.exit = Some(status.unwrap_or_else(|_| failed_status()));
                watcher.changed.notify_all();
            });
        if let Err(e) = spawned {
            // Without a watcher nobody would reap the child: kill it now.
            process.signal_group(Signal::Kill);
            return Err(e);
        }
        Ok(process)
    }

    /// The process id (also the process group id on Unix).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The exit status, if the process has exited.
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        self.state.lock().exit
    }

    /// Waits until the process has exited or `deadline` passes.
    pub(crate) fn wait_exit(&self, deadline: Instant) -> Option<ExitStatus> {
        let mut st = self.state.lock();
        while st.exit.is_none() {
            if self.changed.wait_until(&mut st, deadline).timed_out() {
                break;
            }
        }
        st.exit
    }

    /// Records that the stderr drain reached EOF.
    pub(crate) fn mark_stderr_done(&self) {
        self.state.lock().stderr_done = true;
        self.changed.notify_all();
    }

    /// Waits until the stderr drain is done or `deadline` passes.
    pub(crate) fn wait_stderr_done(&self, deadline: Instant) {
        let mut st = self.state.lock();
        while !st.stderr_done {
            if self.changed.wait_until(&mut st, deadline).timed_out() {
                break;
            }
        }
    }

    /// The escalation after stdin was closed: wait `grace` for a clean exit, then SIGTERM the
    /// group, wait `grace` again, then SIGKILL it. Whatever is left of the group afterwards
    /// (grandchildren of a server that exited) is killed too. Bounded by `2 × grace + 1 s`.
    pub(crate) fn terminate(&self, grace: Duration) -> Option<ExitStatus> {
        let mut status = self.wait_exit(Instant::now() + grace);
        if status.is_none() {
            self.signal_group(Signal::Term);
            status = self.wait_exit(Instant::now() + grace);
        }
        if status.is_none() {
            self.signal_group(Signal::Kill);
            status = self.wait_exit(Instant::now() + Duration::from_secs(1));
        }
        // The leader is gone; sweep any member of its group still alive.
        self.signal_group(Signal::Kill);
        status
    }

    /// Sends a signal to the whole process group.
    pub(crate) fn signal_group(&self, signal: Signal) {
        #[cfg(unix)]
        {
            let sig = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            // SAFETY: kill(2) with a negative pid signals the group whose id is our child's pid
            // (it was made a group leader at spawn). ESRCH (no such group) is fine to ignore.
            unsafe {
                libc::kill(-(self.pid as libc::pid_t), sig);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = signal;
            let _ = Command::new("taskkill")
                .args(["/PID", &self.pid.to_string(), "/T", "/F"])
                .output();
        }
    }
}

/// The signals of the teardown.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    /// Ask to stop.
    Term,
    /// Stop now.
    Kill,
}

fn failed_status() -> ExitStatus {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw(1 << 8)
    }
    #[cfg(not(unix))]
    {
        use std::os::windows::process::ExitStatusExt;
        ExitStatus::from_raw(1)
    }
}
