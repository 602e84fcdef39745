//! `perf_bench`'s modes that measure one feature of ours, which the floor has no counterpart
//! for: the tool search index (`index`) and the output budget (`render`).
//!
//! - `index`: `--n` tools of the captured catalogues (`tests/fixtures/catalogue`; one server up
//!   to 100 tools, else 100 a server, so a multiple of 100), read from their listings' JSON;
//!   then R times the index built over them (its time and the bytes it holds, as the allocator
//!   counts them: `mallinfo2`, glibc only, else 0) and a search (every labelled query, the mean
//!   of one); then R times the same tools listed by a real server process (`mcp-test-server
//!   --catalogue`, built beside this program): the handshake, and `tools/list` alone timed.
//!   The `--cmd`/`--url` server is not used.
//! - `render`: `result` mode through the manager (`connect_servers`, the tool `build_tools`
//!   makes of the bench server's `blob`), each call's output rendered for the model
//!   (`ToolOutput::model_text`) within the output budget of `--budget` tokens (`none`:
//!   unlimited, the whole rendering), timed from the call to the text.

use std::collections::BTreeMap;
use std::time::Duration;

use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::build_tools;
use mcp_runtime::manager::{ManagerOptions, McpManager, OutputBudget};
use mcp_runtime::{CallOptions, ConnectOptions};
use serde_json::{json, Value};

use crate::index;
use crate::perf::{self, Args, BLOB};

/// The bytes the allocator holds (in use, `mmap`ed blocks included), glibc only.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn allocated() -> isize {
    // SAFETY: mallinfo2 takes no argument and only reads the allocator's counters.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as isize
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn allocated() -> isize {
    0
}

/// The `index` mode (see the module docs).
pub fn index(args: &Args) -> Value {
    let captured = index::captured();
    let queries = index::queries();
    let (servers, per_server) = index::shape(args.n);
    let tools = index::agent_tools(index::read(&index::listings(
        &captured, servers, per_server,
    )));
    let reps = args.reps.max(1);
    let (mut builds, mut searches, mut bytes) = (Vec::new(), Vec::new(), 0);
    for _ in 0..reps {
        let (built, took, held) = index::build(&tools, &allocated);
        builds.push(took);
        bytes = held;
        searches.push(index::search_time(&built, &queries));
    }
    let all = index::first(&captured, tools.len());
    let (mut lists, mut colds) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let listed = index::listed_by_a_server(&all);
        lists.push(listed.list);
        colds.push(listed.cold);
    }
    json!({"tools": tools.len(), "servers": servers, "reps": reps,
           "index_build_ms": perf::ms(index::median(builds)), "index_bytes": bytes,
           "index_search_us": perf::us(index::median(searches)),
           "list_ms": perf::ms(index::median(lists)), "cold_list_ms": perf::ms(index::median(colds))})
}

/// The `render` mode (see the module docs).
pub fn render(args: &Args, config: ServerConfig, connect: ConnectOptions) -> Value {
    let output_budget = match args.budget {
        Some(tokens) => OutputBudget {
            tokens: Some(tokens),
            ..OutputBudget::default()
        },
        None => OutputBudget::unlimited(),
    };
    let manager = McpManager::new(ManagerOptions {
        startup_timeout: Duration::from_secs(60),
        output_budget,
        connect,
        ..ManagerOptions::default()
    });
    let report = manager.connect_servers(&BTreeMap::from([("bench".to_owned(), config)]));
    assert_eq!(report.connected.len(), 1, "{report:?}");
    let name = format!("mcp_bench_{BLOB}");
    let tool = build_tools(&manager)
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let mut shown = 0;
    let mut call = || {
        let output = tool
            .execute(json!({ "bytes": args.bytes }), CallOptions::default())
            .expect("blob");
        assert!(!output.is_error, "{:?}", output.failure);
        let text = output.model_text();
        match args.budget {
            None => assert_eq!(text.len(), args.bytes),
            // Whole where it fits, else cut to the cap (4 bytes a token) with its notice.
            Some(tokens) => assert!(text.len() <= args.bytes.min(tokens * 4)),
        }
        shown = text.len();
    };
    let times = perf::timed(args.warmup.min(2), args.n, &mut call);
    manager.disconnect_all();
    let mut fields = perf::result_fields(args, times);
    fields["budget_tokens"] = json!(args.budget);
    fields["shown_bytes"] = json!(shown);
    fields
}
