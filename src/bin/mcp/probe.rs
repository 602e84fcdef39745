//! `mcp probe`: a headless check of one server. It connects (a URL, with the transport detected,
//! or a stdio command), answers server requests without asking anyone, lists the tools, calls
//! every one with arguments built from its schema, and reports.
//!
//! A probe must not change anything. Tools annotated `destructiveHint: true` are skipped
//! (reported as `{"tool", "skipped": "destructive"}`) unless `--call-all` is given, and
//! `roots/list` is answered with an empty temporary directory made for this probe and removed
//! afterwards, so a filesystem server writes its "test" files there, never into the current
//! directory.

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{ClientCapabilities, Root, Tool};
use mcp_runtime::transport::{HttpTarget, StdioCommand};
use mcp_runtime::{CallOptions, Client, ClientHandler, ConnectOptions, Endpoint};
use serde_json::{json, Map, Value};

/// What to probe.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Url {
        url: String,
        headers: Vec<(String, String)>,
        /// `--oauth JSON`: log in headlessly with this `oauth` object on a 401.
        oauth: Option<serde_json::Value>,
        /// `--ca-file`, `--client-cert`, `--client-key`.
        tls: crate::target::UrlTls,
    },
    Command(Vec<String>),
}

/// Answers every server request the way a cooperative, non-interactive host would.
struct Unattended {
    root: std::path::PathBuf,
}

/// The probe's root: a fresh, empty, private directory, removed when dropped.
struct TempRoot(std::path::PathBuf);

impl TempRoot {
    fn new() -> std::io::Result<TempRoot> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path =
            std::env::temp_dir().join(format!("mcp-probe-root-{}-{nanos:08x}", std::process::id()));
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        // Not create_dir_all: a directory that already exists is not ours to use.
        builder.create(&path)?;
        Ok(TempRoot(path))
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl ClientHandler for Unattended {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            roots: Some(json!({"listChanged": false})),
            sampling: Some(json!({})),
            elicitation: Some(json!({})),
            ..Default::default()
        }
    }

    fn list_roots(&self, _: &str) -> Result<Vec<Root>, RpcError> {
        Ok(vec![Root::from_path(&self.root)])
    }

    fn create_message(&self, _: &str, _: Value) -> Result<Value, RpcError> {
        Ok(
            json!({"role": "assistant", "content": {"type": "text", "text": "This is a canned reply from mcp probe."},
                  "model": "mcp-probe", "stopReason": "endTurn"}),
        )
    }

    fn elicit(&self, _: &str, params: Value) -> Result<Value, RpcError> {
        let content = arguments_for(params.get("requestedSchema").unwrap_or(&Value::Null));
        Ok(json!({"action": "accept", "content": content}))
    }
}

/// Arguments from a JSON schema: each property's default, else its first enum value, else a
/// placeholder of its type.
pub fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            args.insert(name.clone(), value_for(prop, 0));
        }
    }
    Value::Object(args)
}

/// A value `prop` accepts: its default, its first enum value or its const, else one of its
/// type (the first of a union that is not `null`; the first branch of an `anyOf`/`oneOf`),
/// an object filled the same way.
fn value_for(prop: &Value, depth: usize) -> Value {
    if let Some(v) = prop
        .get("default")
        .or_else(|| prop.get("enum").and_then(|e| e.get(0)))
        .or_else(|| prop.get("const"))
    {
        return v.clone();
    }
    let kind = match prop.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    };
    if kind.is_none() && depth < 8 {
        let branch = ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| prop.get(*k).and_then(|b| b.get(0)));
        if let Some(branch) = branch {
            return value_for(branch, depth + 1);
        }
    }
    match kind {
        Some("integer") | Some("number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") if depth < 8 => match arguments_for(prop) {
            Value::Object(m) => Value::Object(m),
            _ => json!({}),
        },
        Some("object") => json!({}),
        Some("null") => Value::Null,
        _ => json!("test"),
    }
}

/// Runs the probe; the exit status is 1 when a call failed, and the failure's own status when
/// the server cannot be connected or listed.
pub fn run(
    target: &Target,
    options: &ConnectOptions,
    call_timeout: Duration,
    as_json: bool,
    call_all: bool,
) -> u8 {
    let root = match TempRoot::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp: cannot create the probe's temporary root: {e}");
            return 1;
        }
    };
    let dir = root.0.clone();
    crate::signals::on_signal(move || {
        let _ = std::fs::remove_dir_all(dir);
    });
    probe(target, options, call_timeout, as_json, call_all, &root.0)
}

/// With `--oauth`, an OAuth provider that logs in headlessly (following the authorization URL
/// itself: servers that approve without a user) and keeps its tokens in the user's auth file.
fn headless_oauth(
    url: &str,
    headers: &[(String, String)],
    oauth: Option<&serde_json::Value>,
) -> Result<Option<Arc<dyn mcp_runtime::transport::AuthProvider>>, mcp_runtime::Error> {
    use mcp_runtime::auth::{headless, OAuthOptions};
    use mcp_runtime::config::provider_for;
    let Some(oauth) = oauth else {
        return Ok(None);
    };
    let config = mcp_runtime::config::ServerConfig {
        transport: Some("http".into()),
        url: Some(url.to_owned()),
        headers: headers.iter().cloned().collect(),
        oauth: Some(oauth.clone()),
        ..Default::default()
    };
    let provider = provider_for(
        &config,
        Arc::new(mcp_runtime::config::FileAuthStorage::user_default()),
        headless(OAuthOptions::default()),
        OAuthOptions::default(),
    )?;
    Ok(provider.map(|p| Arc::new(p) as Arc<dyn mcp_runtime::transport::AuthProvider>))
}

fn probe(
    target: &Target,
    options: &ConnectOptions,
    call_timeout: Duration,
    as_json: bool,
    call_all: bool,
    root: &std::path::Path,
) -> u8 {
    let endpoint = match target {
        Target::Url {
            url,
            headers,
            oauth,
            tls,
        } => Endpoint::Url(HttpTarget {
            url: url.clone(),
            headers: headers.clone(),
            proxy: None,
            ca_file: tls.paths()[0].clone(),
            client_cert: tls.paths()[1].clone(),
            client_key: tls.paths()[2].clone(),
            auth: match headless_oauth(url, headers, oauth.as_ref()) {
                Ok(auth) => auth,
                Err(e) => {
                    eprintln!("mcp: --oauth: {e}");
                    return 2;
                }
            },
        }),
        Target::Command(argv) => Endpoint::Stdio(StdioCommand::new(
            argv[0].clone(),
            argv[1..].iter().cloned(),
        )),
    };
    let mut options = options.clone();
    options.handler = Arc::new(Unattended {
        root: root.to_path_buf(),
    });
    let client = match Client::connect("probe", &endpoint, options) {
        Ok(c) => c,
        Err(e) => {
            if as_json {
                outln!(
                    "{}",
                    json!({"server": null, "protocolVersion": null, "tools": [], "calls": [], "error": e.to_string()})
                );
            } else {
                outln!("connect: FAILED: {e}");
            }
            return crate::failure::classify(&e).1;
        }
    };
    let closer = client.clone();
    crate::signals::on_signal(move || closer.close());
    let info = client.server_info();
    let tools = match client.list_tools() {
        Ok(t) => t,
        Err(e) => {
            outln!("tools/list: FAILED: {e}");
            client.close();
            return crate::failure::classify(&e).1;
        }
    };
    if !as_json {
        outln!(
            "server: {} {} (protocol {}, {})",
            info.name,
            info.version,
            client.protocol_version(),
            client.transport_kind()
        );
        outln!("tools: {}", tools.len());
    }
    let calls = call_each(&client, &tools, call_timeout, call_all);
    let failed = calls
        .iter()
        .any(|c| c.get("skipped").is_none() && !c["ok"].as_bool().unwrap_or(false));
    if as_json {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        outln!(
            "{}",
            json!({"server": info.name, "protocolVersion": client.protocol_version().as_str(),
                   "transport": client.transport_kind(), "tools": names, "calls": calls,
                   "serverInfo": info, "capabilities": client.server_capabilities(),
                   "instructions": client.instructions()})
        );
    } else {
        for c in &calls {
            let verdict = match (c["ok"].as_bool(), c["isError"].as_bool()) {
                _ if c["skipped"] == "destructive" => {
                    "skipped (destructiveHint: true; --call-all calls it)".to_owned()
                }
                _ if c.get("skipped").is_some() => {
                    "skipped (readOnlyHint: false; --call-all calls it)".to_owned()
                }
                (Some(true), Some(true)) => "ok (the tool reported an error)".to_owned(),
                (Some(true), _) => "ok".to_owned(),
                _ => format!("FAILED: {}", c["error"].as_str().unwrap_or("")),
            };
            outln!("  {:40} {verdict}", c["tool"].as_str().unwrap_or(""));
        }
        outln!(
            "{}",
            if failed {
                "probe: protocol failures found"
            } else {
                "probe: every call completed"
            }
        );
    }
    client.close();
    u8::from(failed)
}

/// Why a tool is not called without `--call-all`: it says it writes (`readOnlyHint: false`) or
/// may destroy something (`destructiveHint: true`). A tool with no annotations is called: the
/// specification's defaults ("may write") tell a host what to assume before asking its user,
/// and most servers annotate nothing, so a probe that skipped them would check almost nothing;
/// the user chose the server, and a tool that writes says so.
fn writes(tool: &Tool) -> Option<&'static str> {
    let a = tool.annotations.as_ref()?;
    if a.destructive_hint == Some(true) {
        Some("destructive")
    } else if a.read_only_hint == Some(false) {
        Some("writes")
    } else {
        None
    }
}

/// Calls every tool (but the destructive ones unless `call_all`), all at once (one slow tool
/// does not hold up the others).
fn call_each(client: &Client, tools: &[Tool], timeout: Duration, call_all: bool) -> Vec<Value> {
    std::thread::scope(|s| {
        let handles: Vec<_> = tools
            .iter()
            .map(|tool| {
                s.spawn(move || {
                    if let Some(why) = writes(tool).filter(|_| !call_all) {
                        return json!({"tool": tool.name, "skipped": why});
                    }
                    let args = arguments_for(&tool.input_schema);
                    match client.call_tool_with(&tool.name, args, CallOptions::timeout(timeout)) {
                        Ok(r) => json!({"tool": tool.name, "ok": true, "isError": r.is_error(), "error": null}),
                        Err(e) => json!({"tool": tool.name, "ok": false, "isError": null, "error": e.to_string()}),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|panic| {
                    let message = crate::failure::panic_text(&*panic);
                    json!({"tool": null, "ok": false, "isError": null,
                           "error": format!("internal error: {message}")})
                })
            })
            .collect()
    })
}
