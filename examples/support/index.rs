//! The tool search index over real catalogues, as `search_scale` and `perf_bench --mode index`
//! measure it: catalogues of N tools (the captured definitions of `tests/fixtures/catalogue`,
//! repeated over up to 100 servers), read from their listings' JSON, listed by a real server
//! process, indexed and searched.
//!
//! The program that includes this declares `catalogue` (`tests/common/catalogue.rs`) at its
//! root. Memory is counted by the caller (`search_scale` counts allocations itself,
//! `perf_bench` asks the allocator): [`build`] takes the count of live bytes as a function.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::host::{AgentTool, ToolIndex};
use mcp_runtime::protocol::Tool;
use mcp_runtime::Client;
use serde_json::Value;

use crate::catalogue;

/// A `tools/list` result, read as the client reads one.
#[derive(serde::Deserialize)]
struct Listing {
    tools: Vec<Tool>,
}

/// Every captured definition, as JSON values.
pub fn captured() -> Vec<Value> {
    catalogue::raw().into_iter().map(|(_, t)| t).collect()
}

/// The labelled queries of the catalogue's query set.
pub fn queries() -> Vec<String> {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(catalogue::dir().join("queries.json")).unwrap(),
    )
    .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_str().unwrap().to_owned())
        .collect()
}

/// How `tools` tools are spread over servers: one server up to 100 tools, else 100 a server
/// (`search_scale`'s 1,000 and 10,000: 10 and 100 servers).
pub fn shape(tools: usize) -> (usize, usize) {
    if tools <= 100 {
        (1, tools)
    } else {
        (tools / 100, 100)
    }
}

/// `servers` `tools/list` results (JSON text) of `per_server` tools each, cycling through the
/// captured definitions.
pub fn listings(captured: &[Value], servers: usize, per_server: usize) -> Vec<(String, String)> {
    (0..servers)
        .map(|s| {
            let tools: Vec<&Value> = (0..per_server)
                .map(|t| &captured[(s * per_server + t) % captured.len()])
                .collect();
            let text = serde_json::json!({ "tools": tools }).to_string();
            (format!("s{s:02}"), text)
        })
        .collect()
}

/// The definitions of `listings` read from their JSON, each with its server.
pub fn read(listings: &[(String, String)]) -> Vec<(String, Tool)> {
    let mut definitions: Vec<(String, Tool)> = Vec::new();
    for (server, text) in listings {
        let listed: Listing = serde_json::from_str(text).unwrap();
        definitions.extend(listed.tools.into_iter().map(|t| (server.clone(), t)));
    }
    definitions
}

/// The definitions as the host's tools, with their exposed names.
pub fn agent_tools(definitions: Vec<(String, Tool)>) -> Vec<Arc<dyn AgentTool>> {
    catalogue::named(definitions)
        .into_iter()
        .map(|t| t as Arc<dyn AgentTool>)
        .collect()
}

/// The definitions of the first `n` tools, cycling through the captured ones.
pub fn first(captured: &[Value], n: usize) -> Vec<&Value> {
    (0..n).map(|i| &captured[i % captured.len()]).collect()
}

/// A real listing's times: the test server (built beside this program) serving `tools` from
/// a file, started, its handshake run and all its tools listed.
pub struct Listed {
    /// Start, handshake and `tools/list`.
    pub cold: Duration,
    /// `tools/list` alone.
    pub list: Duration,
}

/// Lists `tools` from a real server process (see [`Listed`]).
pub fn listed_by_a_server(tools: &[&Value]) -> Listed {
    let renamed: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut t = (*t).clone();
            t["name"] = Value::String(format!("{}_{i}", t["name"].as_str().unwrap_or("t")));
            t
        })
        .collect();
    let file = std::env::temp_dir().join(format!("search-scale-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::json!({ "tools": renamed }).to_string()).unwrap();
    let server = std::env::current_exe()
        .unwrap()
        .with_file_name("mcp-test-server");
    let started = Instant::now();
    let client = Client::stdio(
        "scale",
        server.display().to_string(),
        ["--catalogue".to_owned(), file.display().to_string()],
    )
    .expect("the test server (cargo build --examples)");
    let listing = Instant::now();
    let listed = client.list_tools().unwrap();
    let (cold, list) = (started.elapsed(), listing.elapsed());
    assert_eq!(listed.len(), tools.len());
    client.close();
    let _ = std::fs::remove_file(&file);
    Listed { cold, list }
}

/// An index of `tools`, the time its build took, and the bytes it holds (`live()` after the
/// build minus before it).
pub fn build(
    tools: &[Arc<dyn AgentTool>],
    live: &dyn Fn() -> isize,
) -> (ToolIndex, Duration, isize) {
    let before = live();
    let started = Instant::now();
    let mut index = ToolIndex::new();
    index.sync(tools.iter().cloned());
    let took = started.elapsed();
    (index, took, live() - before)
}

/// The mean time of one search: every query, as many rounds as make about 100,000 tools
/// searched (3 to 100).
pub fn search_time(index: &ToolIndex, queries: &[String]) -> Duration {
    let rounds = (100_000 / index.len().max(1)).clamp(3, 100);
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        for q in queries {
            found += index.search(q, 5).len();
        }
    }
    assert!(found > 0);
    started.elapsed() / (rounds * queries.len()) as u32
}

/// The median of `times`.
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}
