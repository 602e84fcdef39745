//! The era cached beside the tools: the probe is paid once per config, a remembered era that
//! fails is probed again, and a stateless listing's `ttlMs` / `cacheScope` travel with it.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::config::config_hash;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::manager::{FileToolCache, ToolCache};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use mcp_runtime::protocol::Listing;
use mcp_runtime::protocol::ProtocolVersion;

fn server_config(args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(
        common::example_path("mcp-modern-server")
            .display()
            .to_string(),
        args.iter().copied(),
    )
}

fn log_path(test: &str) -> String {
    common::server_log(&format!("era-cache-{test}"))
}

fn log_lines(path: &str) -> Vec<String> {
    let lines = common::log_lines(path);
    let _ = std::fs::remove_file(path);
    lines
}

fn manager(cache: &Arc<FileToolCache>) -> McpManager {
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        cache: Some(cache.clone()),
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_secs(20);
    o.connect.request_timeout = Duration::from_secs(20);
    o.connect.stdio.close_grace = Duration::from_millis(500);
    McpManager::new(o)
}

fn run_once(cache: &Arc<FileToolCache>, config: &ServerConfig) -> Option<mcp_runtime::Client> {
    let manager = manager(cache);
    let configs = BTreeMap::from([("srv".to_owned(), config.clone())]);
    // Past the startup gate if it must (a loaded machine): the connection, or its error.
    manager.connect_servers(&configs);
    let client = manager.wait_for_connection("srv", Duration::from_secs(20), None);
    let client = client.unwrap_or_else(|e| panic!("srv did not connect: {e}"));
    manager.disconnect_all();
    Some(client)
}

#[test]
fn the_era_is_cached_beside_the_tools_so_the_probe_is_paid_once() {
    let cache = Arc::new(FileToolCache::new(common::temp_dir("era-once")));
    let log = log_path("once");
    let config = server_config(&["--mode", "legacy-exit", "--log", &log]);
    run_once(&cache, &config);
    assert_eq!(
        log_lines(&log)[..4],
        ["start", "server/discover", "start", "initialize"],
        "the first run probes (and respawns)"
    );
    assert_eq!(
        cache.era("srv", &config_hash(&config)).as_deref(),
        Some("2025-11-25")
    );
    run_once(&cache, &config);
    assert_eq!(
        log_lines(&log)[..2],
        ["start", "initialize"],
        "the second run goes straight to the handshake"
    );
}

/// The cache says `config`'s server speaks the handshake era (it spoke it once).
fn remember_the_handshake_era(cache: &FileToolCache, config: &ServerConfig) {
    let handshake = Listing {
        protocol_version: Some("2025-11-25".into()),
        ..Listing::default()
    };
    cache
        .set_listing("srv", &config_hash(config), &[], &handshake)
        .unwrap();
}

#[test]
fn a_remembered_era_that_fails_is_probed_again() {
    let cache = Arc::new(FileToolCache::new(common::temp_dir("era-stale")));
    let log = log_path("stale");
    let config = server_config(&["--mode", "modern", "--log", &log]);
    remember_the_handshake_era(&cache, &config);
    let client = run_once(&cache, &config).unwrap();
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(
        log_lines(&log)[..4],
        ["start", "initialize", "start", "server/discover"]
    );
    assert_eq!(
        cache.era("srv", &config_hash(&config)).as_deref(),
        Some("2026-07-28")
    );
}

/// The connection of the remembered era, dropped once `initialize` failed, reports its end only
/// after the stateless one replaced it (its output held open past its server's exit): the live
/// connection stays, and nothing says the server was lost.
#[test]
fn a_late_end_of_the_dropped_connection_does_not_end_its_replacement() {
    let cache = Arc::new(FileToolCache::new(common::temp_dir("era-late-end")));
    let hold = common::Hold::new();
    let config = server_config(&["--mode", "modern", "--hold-stdout", &hold.port()]);
    remember_the_handshake_era(&cache, &config);
    // The host hears of a connection's end after the manager has handled it.
    struct Ends(crossbeam_channel::Sender<String>);
    impl mcp_runtime::ClientHandler for Ends {
        fn on_connection_closed(&self, _server: &str, reason: &mcp_runtime::Error) {
            let _ = self.0.send(reason.to_string());
        }
    }
    let (ends_tx, ends) = crossbeam_channel::unbounded();
    let mut o = ManagerOptions {
        project_dir: std::env::temp_dir(),
        cache: Some(cache.clone()),
        ..ManagerOptions::default()
    };
    o.connect.timeout = Duration::from_secs(20);
    o.connect.handler = Arc::new(Ends(ends_tx));
    let manager = McpManager::new(o);
    let configs = BTreeMap::from([("srv".to_owned(), config.clone())]);
    manager.connect_servers(&configs);
    let client = manager.wait_for_connection("srv", Duration::from_secs(20), None);
    let client = client.unwrap_or_else(|e| panic!("srv did not connect: {e}"));
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    // Both servers' holders (the dropped one's and the live one's) are waiting; the first end
    // of output the client can see now is the dropped connection's.
    let (first, second) = (hold.wait(), hold.wait());
    first.release();
    second.release();
    // The dropped connection's end arrives (the live server keeps its own stdout open).
    let reason = ends
        .recv_timeout(Duration::from_secs(20))
        .expect("the dropped connection's end is heard");
    assert!(reason.contains("closed"), "{reason}");
    let live = manager.client("srv").expect("the live connection stays");
    assert!(live.closed_reason().is_none(), "{:?}", live.closed_reason());
    assert_eq!(live.list_tools().unwrap().len(), 7);
    assert_eq!(manager.connection_status("srv").as_str(), "connected");
    manager.disconnect_all();
}

#[test]
fn a_stateless_listing_keeps_its_ttl_and_scope() {
    let cache = Arc::new(FileToolCache::new(common::temp_dir("era-ttl")));
    let config = server_config(&["--mode", "modern"]);
    let client = run_once(&cache, &config).unwrap();
    let listing = client.tools_listing();
    assert_eq!(listing.protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(listing.ttl_ms, Some(60_000));
    assert_eq!(listing.cache_scope.as_deref(), Some("public"));
    assert!(client.tools_fresh());
    let tools = cache.get("srv", &config_hash(&config)).expect("fresh");
    assert_eq!(tools.len(), 7);
}

#[test]
fn a_listing_past_its_ttl_is_fetched_again_when_the_tools_are_next_needed() {
    let cache = Arc::new(FileToolCache::new(common::temp_dir("era-lazy")));
    let log = log_path("lazy");
    let manager = manager(&cache);
    let config = server_config(&["--mode", "modern", "--ttl", "0", "--log", &log]);
    let configs = BTreeMap::from([("srv".to_owned(), config)]);
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected, ["srv"], "{:?}", report.errors);
    assert!(
        !manager.client("srv").unwrap().tools_fresh(),
        "ttlMs 0 is stale at once"
    );
    let lists = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == "tools/list")
            .count()
    };
    assert_eq!(lists(), 1);
    assert_eq!(
        mcp_runtime::host::build_tools(&manager).len(),
        7,
        "the stale tools are served meanwhile"
    );
    common::eventually("listed again", Duration::from_secs(10), || lists() >= 2);
    manager.disconnect_all();
    let _ = std::fs::remove_file(&log);
}
