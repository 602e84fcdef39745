//! In-memory MCP servers for the manager, the loader and the session: a [`Fleet`] gives a
//! manager its `connector`, and each connect attempt of a server it knows gets a fresh
//! in-memory pair with a server thread behind it. The test holds the controls: hold a server's
//! `initialize` (the gate, deferred tools) or its `tools/list` (coalescing), change its tools,
//! send it a notification, kill its connection, count what it was asked. No process, no
//! socket, no sleep: every wait on a fact has a deadline.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{select, Receiver, Sender};
use mcp_runtime::transport::{memory_pair, MemoryConnector};
use mcp_runtime::ServerConfig;
use serde_json::{json, Value};

/// How long a held server waits for its release before it gives up (a test that forgot to
/// release must still end).
const HOLD_BOUND: Duration = Duration::from_secs(30);

/// A gate a server waits at: [`Gate::release`] opens it for good.
pub struct Gate(Mutex<Option<Sender<()>>>, Receiver<()>);

impl Gate {
    fn new() -> Arc<Gate> {
        let (tx, rx) = crossbeam_channel::bounded(0);
        Arc::new(Gate(Mutex::new(Some(tx)), rx))
    }

    /// Opens the gate: every wait at it ends, now and later.
    pub fn release(&self) {
        self.0.lock().unwrap().take();
    }

    fn pass(&self) {
        let _ = self.1.recv_timeout(HOLD_BOUND);
    }
}

/// One server as the fleet knows it.
#[derive(Default)]
struct Known {
    /// Its tools: (name, description).
    tools: Vec<(String, String)>,
    /// Held before answering `initialize`, while set.
    initialize_gate: Option<Arc<Gate>>,
    /// Held before answering `tools/list` (after the first), while set.
    list_gate: Option<Arc<Gate>>,
    /// The live connection: what the server sends through, and its kill switch.
    live: Option<(Sender<Value>, Sender<()>)>,
    connects: usize,
    lists: Arc<AtomicUsize>,
}

/// The in-memory servers of one test.
#[derive(Clone, Default)]
pub struct Fleet {
    servers: Arc<Mutex<HashMap<String, Known>>>,
}

impl Fleet {
    pub fn new() -> Fleet {
        Fleet::default()
    }

    /// Adds (or changes) the server `name` with these tools (descriptions `<tool> (<name>)`).
    pub fn server(&self, name: &str, tools: &[&str]) -> &Fleet {
        self.set_tools(name, tools, "");
        self
    }

    /// The server's tools from its next listing on, each description ending in `suffix`.
    pub fn set_tools(&self, name: &str, tools: &[&str], suffix: &str) {
        let mut servers = self.servers.lock().unwrap();
        let known = servers.entry(name.to_owned()).or_default();
        known.tools = tools
            .iter()
            .map(|t| (t.to_string(), format!("{t} ({name}){suffix}")))
            .collect();
    }

    /// Holds the server's next `initialize` answers until the gate is released.
    pub fn hold_initialize(&self, name: &str) -> Arc<Gate> {
        let gate = Gate::new();
        self.known(name, |k| k.initialize_gate = Some(Arc::clone(&gate)));
        gate
    }

    /// Holds the server's `tools/list` answers (all but its first) until the gate is released.
    pub fn hold_lists(&self, name: &str) -> Arc<Gate> {
        let gate = Gate::new();
        self.known(name, |k| k.list_gate = Some(Arc::clone(&gate)));
        gate
    }

    /// Sends a notification from the server over its live connection.
    pub fn notify(&self, name: &str, method: &str) {
        let sender = self.known(name, |k| k.live.as_ref().map(|l| l.0.clone()));
        if let Some(s) = sender {
            let _ = s.send(super::rpc::notification(method, None));
        }
    }

    /// Ends the server's live connection, as a crash would.
    pub fn kill(&self, name: &str) {
        let live = self.known(name, |k| k.live.take());
        if let Some((_, kill)) = live {
            let _ = kill.send(());
        }
    }

    /// How many times the server was connected to.
    pub fn connects(&self, name: &str) -> usize {
        self.known(name, |k| k.connects)
    }

    /// How many `tools/list` requests the server answered or is answering.
    pub fn lists(&self, name: &str) -> usize {
        self.known(name, |k| k.lists.load(Ordering::SeqCst))
    }

    fn known<T>(&self, name: &str, f: impl FnOnce(&mut Known) -> T) -> T {
        f(self
            .servers
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default())
    }

    /// The manager's connector: the fleet's servers in memory; any other server by its config.
    #[allow(clippy::type_complexity)]
    pub fn connector(
        &self,
    ) -> Arc<dyn Fn(&str, &ServerConfig) -> Option<MemoryConnector> + Send + Sync> {
        let fleet = self.clone();
        Arc::new(move |name, _config| {
            if !fleet.servers.lock().unwrap().contains_key(name) {
                return None;
            }
            Some(fleet.start(name))
        })
    }

    /// A fresh pair for `name`, its server end served on a thread of its own.
    fn start(&self, name: &str) -> MemoryConnector {
        let (connector, end) = memory_pair();
        let (kill, killed) = crossbeam_channel::bounded::<()>(1);
        let (lists, before) = self.known(name, |k| {
            k.connects += 1;
            let before = k.live.replace((end.sender.clone(), kill));
            (Arc::clone(&k.lists), before)
        });
        // A new connection while the last is live: the last one ends, as a restart would.
        if let Some((_, kill)) = before {
            let _ = kill.send(());
        }
        let (fleet, name) = (self.clone(), name.to_owned());
        std::thread::spawn(move || loop {
            select! {
                recv(end.receiver) -> message => match message {
                    Ok(message) => {
                        if let Some(call) = super::rpc::Call::of(&message) {
                            let result = fleet.answer(&name, &call.method, call.params.as_ref(), &lists);
                            let _ = end.sender.send(call.result(result));
                        }
                    }
                    Err(_) => return,
                },
                // Dropping `end` closes the client's transport.
                recv(killed) -> _ => return,
            }
        });
        connector
    }

    fn answer(
        &self,
        name: &str,
        method: &str,
        params: Option<&Value>,
        lists: &AtomicUsize,
    ) -> Value {
        match method {
            "initialize" => {
                if let Some(gate) = self.known(name, |k| k.initialize_gate.clone()) {
                    gate.pass();
                }
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": name, "version": "1"}
                })
            }
            "tools/list" => {
                let before = lists.fetch_add(1, Ordering::SeqCst);
                if before > 0 {
                    if let Some(gate) = self.known(name, |k| k.list_gate.clone()) {
                        gate.pass();
                    }
                }
                let tools: Vec<Value> = self
                    .known(name, |k| k.tools.clone())
                    .into_iter()
                    .map(|(tool, description)| {
                        json!({"name": tool, "description": description,
                               "inputSchema": {"type": "object"}})
                    })
                    .collect();
                json!({ "tools": tools })
            }
            "tools/call" => {
                let message = params
                    .and_then(|p| p.pointer("/arguments/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                json!({"content": [{"type": "text", "text": format!("{name}: {message}")}]})
            }
            _ => json!({}),
        }
    }
}
