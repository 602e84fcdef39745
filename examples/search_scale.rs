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
//! Prints a table; *Hundreds of tools* in docs/host.md (the `host` module's docs) has the figures. The catalogues, the
//! listing, the build and the search are `support/index.rs`'s, which `perf_bench --mode index`
//! shares (the scaling rows `scaling index` of `perf_compare --scaling`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

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
#[path = "support/index.rs"]
mod index;

fn main() {
    let captured = index::captured();
    let queries = index::queries();
    let live = || LIVE.load(Ordering::Relaxed);
    println!(
        "| tools | servers | listed by a server | reading the JSON | index build | index memory per tool | search (mean) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (servers, per_server) in [(1, captured.len()), (10, 100), (100, 100)] {
        let listings = index::listings(&captured, servers, per_server);
        let all = index::first(&captured, servers * per_server);
        let served = index::median(
            (0..5)
                .map(|_| index::listed_by_a_server(&all).cold)
                .collect(),
        );
        // Reading: the definitions read from their JSON, with their exposed names.
        let mut reads = Vec::new();
        for _ in 0..4 {
            let started = Instant::now();
            let definitions = index::read(&listings);
            reads.push(started.elapsed());
            drop(definitions);
        }
        let started = Instant::now();
        let tools = index::agent_tools(index::read(&listings));
        reads.push(started.elapsed());
        let listing = index::median(reads);

        let mut builds: Vec<_> = (0..4).map(|_| index::build(&tools, &live).1).collect();
        let (index, build, memory) = index::build(&tools, &live);
        builds.push(build);
        let build = index::median(builds);
        let per_search = index::search_time(&index, &queries);
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
