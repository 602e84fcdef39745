//! Connecting every configured server in parallel and naming their tools.

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_runtime::config::{resolve_server_config, ServerConfig, SourceMeta};
use mcp_runtime::protocol::Tool;
use mcp_runtime::tool::exposed_names;
use mcp_runtime::{Client, ConnectOptions, Error};

/// One configured server and how connecting it went.
pub struct Server {
    pub name: String,
    pub config: ServerConfig,
    pub source: SourceMeta,
    pub outcome: Result<Connected, Error>,
    pub took: Duration,
}

/// A connected server and its (filtered) tools.
pub struct Connected {
    pub client: Client,
    pub tools: Vec<Tool>,
}

/// An exposed tool: its name and where it routes.
pub struct Exposed {
    pub name: String,
    pub server: usize,
    pub tool: Tool,
}

/// Every server, connected in parallel, and the exposed tool table.
pub struct Fleet {
    pub servers: Vec<Server>,
    pub tools: Vec<Exposed>,
}

impl Fleet {
    /// Connects every enabled server, each on its own thread, and lists its tools.
    pub fn connect(
        configs: Vec<(String, ServerConfig, SourceMeta)>,
        project: &Path,
        options: &ConnectOptions,
    ) -> Fleet {
        let servers: Vec<Server> = std::thread::scope(|s| {
            let handles: Vec<_> = configs
                .into_iter()
                .filter(|(_, c, _)| c.is_enabled())
                .map(|(name, config, source)| {
                    s.spawn(move || {
                        let started = Instant::now();
                        let outcome = connect_one(&name, &config, project, options);
                        Server {
                            name,
                            config,
                            source,
                            outcome,
                            took: started.elapsed(),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("connect thread"))
                .collect()
        });
        let mut identities = Vec::new();
        let mut owners = Vec::new();
        for (i, server) in servers.iter().enumerate() {
            if let Ok(c) = &server.outcome {
                for tool in &c.tools {
                    identities.push((server.name.clone(), tool.name.clone()));
                    owners.push((i, tool.clone()));
                }
            }
        }
        let names = exposed_names(&identities);
        let mut tools: Vec<Exposed> = names
            .into_iter()
            .zip(owners)
            .map(|(name, (server, tool))| Exposed { name, server, tool })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Fleet { servers, tools }
    }

    /// The exposed tool named `name`.
    pub fn find(&self, name: &str) -> Option<(&Exposed, &Connected)> {
        let exposed = self.tools.iter().find(|t| t.name == name)?;
        let connected = self.servers[exposed.server].outcome.as_ref().ok()?;
        Some((exposed, connected))
    }

    /// Closes every connection, in parallel.
    pub fn close(&self) {
        std::thread::scope(|s| {
            for server in &self.servers {
                if let Ok(c) = &server.outcome {
                    s.spawn(|| c.client.close());
                }
            }
        });
    }
}

fn connect_one(
    name: &str,
    config: &ServerConfig,
    project: &Path,
    options: &ConnectOptions,
) -> Result<Connected, Error> {
    // `!command` values, environment-variable names: resolved now, never logged.
    let endpoint = resolve_server_config(name, config, None).endpoint(project)?;
    let mut options = options.clone();
    if let Some(t) = config.timeout() {
        options.timeout = t;
    }
    let client = Client::connect(name, &endpoint, options)?;
    let tools = client
        .list_tools()?
        .into_iter()
        .filter(|t| config.tool_allowed(&t.name))
        .collect();
    Ok(Connected { client, tools })
}
