//! A panic never ends in silence: every thread the library starts, and every host callback it
//! runs, runs inside [`catch`], which turns a panic into [`Error::Internal`] naming where it
//! happened, for whatever that thread or callback served to fail with.
//!
//! The library never installs a panic hook (that is the host's): the default hook still prints
//! the panic to stderr, and a host built with `panic = "abort"` aborts, as with any crate.
//!
//! With the `fault-injection` feature (this crate's own tests; not part of the API), a test puts
//! a panic at any [`Boundary`] with [`inject`]: the hook belongs to the thread that set it and
//! is inherited by every thread the library starts from there ([`spawn`], a manager's threads,
//! the HTTP workers' jobs), so tests that inject run side by side.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::Error;

/// A place where a panic is caught: a thread the library starts, or a host callback it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub(crate) enum Boundary {
    /// A manager's connect attempt (`mcp-<name>-connect`), first or reconnect.
    Connect,
    /// A manager's tools or features refresh after `list_changed`.
    Refresh,
    /// A manager's teardown of a dead connection, and its listeners' news.
    Teardown,
    /// A manager's close of a client.
    Close,
    /// A request sent on the caller's thread (the transport's send).
    Send,
    /// The thread that reads a stdio server's stdout.
    StdioReader,
    /// The thread that writes a stdio server's stdin.
    StdioWriter,
    /// The thread that reads a stdio server's stderr.
    StdioStderr,
    /// An HTTP request's exchange on a worker.
    HttpJob,
    /// The Streamable HTTP GET stream's listener.
    GetStream,
    /// The legacy SSE stream's reader.
    SseStream,
    /// The thread that delivers a connection's notifications to the host's handler.
    Events,
    /// The thread that answers one server request with the host's handler.
    ServerRequest,
    /// The thread that answers a stateless-era server's input requests.
    StatelessInput,
    /// The thread that keeps a stateless-era subscription open.
    Subscriptions,
    /// A `!command` value's reader.
    Command,
    /// The thread that waits for the browser a login opened.
    #[cfg(feature = "oauth")]
    Browser,
    /// A cancellation sent on its own thread.
    CancelSend,
    /// A sandboxed server's network proxy (its acceptor, or one proxied connection).
    #[cfg(unix)]
    SandboxProxy,
}

impl Boundary {
    /// Its name, in snake case (`connect`, `stdio_reader`, ...): what the fault-injection hook
    /// is given.
    #[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Boundary::Connect => "connect",
            Boundary::Refresh => "refresh",
            Boundary::Teardown => "teardown",
            Boundary::Close => "close",
            Boundary::Send => "send",
            Boundary::StdioReader => "stdio_reader",
            Boundary::StdioWriter => "stdio_writer",
            Boundary::StdioStderr => "stdio_stderr",
            Boundary::HttpJob => "http_job",
            Boundary::GetStream => "get_stream",
            Boundary::SseStream => "sse_stream",
            Boundary::Events => "events",
            Boundary::ServerRequest => "server_request",
            Boundary::StatelessInput => "stateless_input",
            Boundary::Subscriptions => "subscriptions",
            Boundary::Command => "command",
            #[cfg(feature = "oauth")]
            Boundary::Browser => "browser",
            Boundary::CancelSend => "cancel_send",
            #[cfg(unix)]
            Boundary::SandboxProxy => "sandbox_proxy",
        }
    }

    /// Where this is, in words.
    pub(crate) fn place(self) -> &'static str {
        match self {
            Boundary::Connect => "the connect thread",
            Boundary::Refresh => "the refresh thread",
            Boundary::Teardown => "the teardown thread",
            Boundary::Close => "the close thread",
            Boundary::Send => "sending a request",
            Boundary::StdioReader => "the stdout reader",
            Boundary::StdioWriter => "the stdin writer",
            Boundary::StdioStderr => "the stderr reader",
            Boundary::HttpJob => "an HTTP request's worker",
            Boundary::GetStream => "the GET stream listener",
            Boundary::SseStream => "the SSE stream reader",
            Boundary::Events => "delivering a notification to the ClientHandler",
            Boundary::ServerRequest => "answering a server request with the ClientHandler",
            Boundary::StatelessInput => "answering a server's input requests",
            Boundary::Subscriptions => "the subscription listener",
            Boundary::Command => "a !command's reader",
            #[cfg(feature = "oauth")]
            Boundary::Browser => "the browser's waiter",
            Boundary::CancelSend => "sending a cancellation",
            #[cfg(unix)]
            Boundary::SandboxProxy => "the sandbox's network proxy",
        }
    }
}

/// The message a panic was raised with (`panic!("...")` gives a `&str` or a `String`), or
/// `fallback` for any other payload.
pub(crate) fn message(payload: &(dyn Any + Send), fallback: &str) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| fallback.to_owned())
}

/// [`Error::Internal`] for a panic caught at `place`.
pub(crate) fn internal(place: &str, payload: &(dyn Any + Send)) -> Error {
    Error::Internal {
        place: place.to_owned(),
        message: message(payload, "a panic without a message"),
    }
}

/// Runs `f` at `at`: its value, or the panic it raised as [`Error::Internal`] (logged).
pub(crate) fn catch<T>(at: Boundary, f: impl FnOnce() -> T) -> Result<T, Error> {
    catch_in(at.place(), || {
        faults::at(at);
        f()
    })
}

/// Runs a host callback (`place` says which): its value, or its panic as
/// [`Error::Internal`] (logged).
pub(crate) fn catch_in<T>(place: &str, f: impl FnOnce() -> T) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let error = internal(place, &*payload);
        log::error!("{error}");
        error
    })
}

/// Starts `job` on a thread named `name`, inside [`catch`] at `at`; a panic is handed to
/// `on_panic` (on that thread) for what the thread served to fail with. The thread inherits
/// the calling thread's injected faults.
pub(crate) fn spawn(
    name: String,
    at: Boundary,
    job: impl FnOnce() + Send + 'static,
    on_panic: impl FnOnce(Error) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    spawn_caught(name, Some(at), at.place(), job, on_panic)
}

/// [`spawn`] for a thread whose job catches at its boundary itself (once per item it serves):
/// no fault is injected at its start, and a panic outside those catches is caught at `place`.
pub(crate) fn spawn_in(
    name: String,
    place: &'static str,
    job: impl FnOnce() + Send + 'static,
    on_panic: impl FnOnce(Error) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    spawn_caught(name, None, place, job, on_panic)
}

fn spawn_caught(
    name: String,
    at: Option<Boundary>,
    place: &'static str,
    job: impl FnOnce() + Send + 'static,
    on_panic: impl FnOnce(Error) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let faults = Faults::here();
    // The thread continues the trace of what started it.
    let traced = crate::telemetry::Carried::here();
    std::thread::Builder::new().name(name).spawn(move || {
        let _entered = faults.enter();
        let _traced = traced.attach();
        let ran = catch_in(place, || {
            if let Some(at) = at {
                faults::at(at);
            }
            job()
        });
        if let Err(e) = ran {
            // What it hands the error to is ours too: a second panic is only logged.
            let _ = catch_in(place, || on_panic(e));
        }
    })
}

#[cfg(feature = "fault-injection")]
pub(crate) use faults::inject;
pub(crate) use faults::Faults;

#[cfg(feature = "fault-injection")]
mod faults {
    use std::cell::RefCell;
    use std::sync::Arc;

    use super::Boundary;

    type Hook = Arc<dyn Fn(Boundary) + Send + Sync>;

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// The faults a thread injects, carried to the threads it starts.
    #[derive(Clone, Default)]
    pub(crate) struct Faults(Option<Hook>);

    impl Faults {
        /// This thread's.
        pub(crate) fn here() -> Faults {
            Faults(HOOK.with(|h| h.borrow().clone()))
        }

        /// Makes them this thread's until the guard drops.
        pub(crate) fn enter(&self) -> Injected {
            Injected(HOOK.with(|h| h.replace(self.0.clone())))
        }
    }

    /// Restores the faults a thread had before [`inject`] when dropped.
    #[must_use = "the faults are removed when this is dropped"]
    pub(crate) struct Injected(Option<Hook>);

    impl Drop for Injected {
        fn drop(&mut self) {
            let before = self.0.take();
            HOOK.with(|h| *h.borrow_mut() = before);
        }
    }

    /// Calls `hook` at every [`Boundary`] this thread, and every thread the library starts from
    /// it, passes; a hook that panics there is a panic at that boundary.
    pub(crate) fn inject(hook: impl Fn(Boundary) + Send + Sync + 'static) -> Injected {
        Faults(Some(Arc::new(hook))).enter()
    }

    /// Runs this thread's hook at `at`.
    pub(crate) fn at(at: Boundary) {
        let hook = HOOK.with(|h| h.borrow().clone());
        if let Some(hook) = hook {
            hook(at);
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
mod faults {
    use super::Boundary;

    /// Nothing is injected in this build.
    #[derive(Clone, Default)]
    pub(crate) struct Faults;

    /// A guard of nothing.
    pub(crate) struct Entered;

    impl Faults {
        pub(crate) fn here() -> Faults {
            Faults
        }

        pub(crate) fn enter(&self) -> Entered {
            Entered
        }
    }

    #[inline(always)]
    pub(crate) fn at(_: Boundary) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_of_either_kind_of_panic() {
        let caught = |f: fn()| std::panic::catch_unwind(f).unwrap_err();
        assert_eq!(message(&*caught(|| panic!("plain")), "?"), "plain");
        assert_eq!(message(&*caught(|| panic!("{}", 42)), "?"), "42");
        assert_eq!(message(&*caught(|| std::panic::panic_any(7_u8)), "?"), "?");
    }

    #[test]
    fn a_caught_panic_names_its_place() {
        let e = catch(Boundary::Close, || panic!("boom")).unwrap_err();
        assert_eq!(e.to_string(), "Internal error in the close thread: boom");
        assert_eq!(catch(Boundary::Close, || 5).unwrap(), 5);
    }

    #[test]
    fn a_spawned_thread_hands_its_panic_over() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        spawn(
            "t".into(),
            Boundary::Events,
            || panic!("in the job"),
            move |e| tx.send(e).unwrap(),
        )
        .unwrap()
        .join()
        .unwrap();
        let e = rx.try_recv().unwrap();
        assert!(matches!(e, Error::Internal { .. }), "{e:?}");
        assert!(e.to_string().contains("in the job"), "{e}");
    }

    #[cfg(feature = "fault-injection")]
    #[test]
    fn injected_faults_follow_the_threads_started_from_here() {
        let _faults = inject(|at| {
            if at == Boundary::Events {
                panic!("injected");
            }
        });
        let (tx, rx) = crossbeam_channel::bounded(1);
        spawn(
            "t".into(),
            Boundary::Events,
            || {},
            move |e| tx.send(e).unwrap(),
        )
        .unwrap()
        .join()
        .unwrap();
        assert!(rx.try_recv().unwrap().to_string().contains("injected"));
        // Another thread, not started from here, has none.
        std::thread::spawn(|| catch(Boundary::Events, || ()).unwrap())
            .join()
            .unwrap();
    }
}
