//! The tool search at scale: catalogues of 380 to 10,000 tools (real servers' definitions from
//! `tests/fixtures/catalogue`, repeated over up to 100 servers), for each size what listing them
//! costs (a real `tools/list` from a server process, handshake included, all the tools from one
//! server; and reading the listings' JSON into definitions alone), what building the index costs
//! beside it, the index's memory per tool, and a search's time (the labelled queries, each run
//! many times). Each time is the median of five.
//!
//! ```text
//! cargo run --release --example search_scale
//! ```
//!
//! Prints a table; the README's "Hundreds of tools" has the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mcp_runtime::host::{AgentTool, ToolIndex};
use mcp_runtime::protocol::Tool;
use mcp_runtime::Client;
use serde_json::Value;

/// Counts the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[path = "../tests/common/catalogue.rs"]
mod catalogue;

/// A `tools/list` result, read as the client reads one.
#[derive(serde::Deserialize)]
struct Listing {
    tools: Vec<Tool>,
}

/// Every captured definition, as JSON values.
fn captured() -> Vec<Value> {
    catalogue::raw().into_iter().map(|(_, t)| t).collect()
}

fn queries() -> Vec<String> {
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

/// `servers` `tools/list` results (JSON text) of `per_server` tools each, cycling through the
/// captured definitions.
fn listings(captured: &[Value], servers: usize, per_server: usize) -> Vec<(String, String)> {
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

/// A real listing: the test server (built beside this example) serving `tools` from a file,
/// started, its handshake run and all its tools listed.
fn listed_by_a_server(tools: &[&Value]) -> std::time::Duration {
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
    .expect("the test server (cargo build --release --examples)");
    let listed = client.list_tools().unwrap();
    let took = started.elapsed();
    assert_eq!(listed.len(), tools.len());
    client.close();
    let _ = std::fs::remove_file(&file);
    took
}

fn median(mut times: Vec<std::time::Duration>) -> std::time::Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let captured = captured();
    let queries = queries();
    println!(
        "| tools | servers | listed by a server | reading the JSON | index build | index memory per tool | search (mean) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (servers, per_server) in [(1, captured.len()), (10, 100), (100, 100)] {
        let listings = listings(&captured, servers, per_server);
        let all: Vec<&Value> = (0..servers * per_server)
            .map(|i| &captured[i % captured.len()])
            .collect();
        let served = median((0..5).map(|_| listed_by_a_server(&all)).collect());
        // Reading: the definitions read from their JSON, with their exposed names.
        let mut reads = Vec::new();
        for _ in 0..4 {
            let started = Instant::now();
            let mut definitions: Vec<(String, Tool)> = Vec::new();
            for (server, text) in &listings {
                let listed: Listing = serde_json::from_str(text).unwrap();
                definitions.extend(listed.tools.into_iter().map(|t| (server.clone(), t)));
            }
            reads.push(started.elapsed());
        }
        let started = Instant::now();
        let mut definitions: Vec<(String, Tool)> = Vec::new();
        for (server, text) in &listings {
            let listed: Listing = serde_json::from_str(text).unwrap();
            definitions.extend(listed.tools.into_iter().map(|t| (server.clone(), t)));
        }
        let tools: Vec<Arc<dyn AgentTool>> = catalogue::named(definitions)
            .into_iter()
            .map(|t| t as Arc<dyn AgentTool>)
            .collect();
        reads.push(started.elapsed());
        let listing = median(reads);

        let mut builds = Vec::new();
        for _ in 0..4 {
            let started = Instant::now();
            let mut index = ToolIndex::new();
            index.sync(tools.iter().cloned());
            builds.push(started.elapsed());
        }
        let before = LIVE.load(Ordering::Relaxed);
        let started = Instant::now();
        let mut index = ToolIndex::new();
        index.sync(tools.iter().cloned());
        builds.push(started.elapsed());
        let build = median(builds);
        let memory = LIVE.load(Ordering::Relaxed) - before;

        let rounds = (100_000 / tools.len()).clamp(3, 100);
        let started = Instant::now();
        let mut found = 0;
        for _ in 0..rounds {
            for q in &queries {
                found += index.search(q, 5).len();
            }
        }
        let per_search = started.elapsed() / (rounds * queries.len()) as u32;
        assert!(found > 0);
        println!(
            "| {} | {servers} | {:.1} ms | {:.1} ms | {:.1} ms | {} bytes | {:.0} µs |",
            tools.len(),
            served.as_secs_f64() * 1e3,
            listing.as_secs_f64() * 1e3,
            build.as_secs_f64() * 1e3,
            memory / tools.len() as isize,
            per_search.as_secs_f64() * 1e6,
        );
    }
}
