//! The output budget: what a model is shown of a tool's result (`ToolOutput::model_text`),
//! from 1 KB to 16 MB of text from a real child process, cut within the cap at a line
//! boundary, never inside a character, with a notice; written whole to a private file when the
//! host asks; binary content written to files; the temporary directory gone at close.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::server_path;
use mcp_runtime::config::ServerConfig;
use mcp_runtime::host::{build_tools, AgentTool};
use mcp_runtime::manager::{ManagerOptions, McpManager, OutputBudget, DEFAULT_OUTPUT_TOKENS};
use mcp_runtime::CallOptions;
use serde_json::json;

fn manager(budget: OutputBudget) -> McpManager {
    let mut options = ManagerOptions {
        project_dir: std::env::temp_dir(),
        output_budget: budget,
        ..ManagerOptions::default()
    };
    options.connect.timeout = Duration::from_secs(20);
    options.connect.request_timeout = Duration::from_secs(60);
    let manager = McpManager::new(options);
    let configs = BTreeMap::from([
        (
            "big".to_owned(),
            ServerConfig::stdio(server_path(), ["--text-tool"]),
        ),
        (
            "open".to_owned(),
            ServerConfig::stdio(server_path(), ["--text-tool"]),
        ),
    ]);
    let report = manager.connect_servers(&configs);
    assert_eq!(report.connected.len(), 2, "{report:?}");
    manager
}

fn tool(manager: &McpManager, name: &str) -> Arc<dyn AgentTool> {
    build_tools(manager)
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The text part of what the model is shown (before the notice), and the notice.
fn split(shown: &str) -> (&str, Option<&str>) {
    match shown.rfind("\n\n[Output cut to about ") {
        Some(at) => (&shown[..at], Some(&shown[at + 2..])),
        None => (shown, None),
    }
}

#[test]
fn results_from_1_kb_to_16_mb_are_cut_to_the_default_cap_at_a_line() {
    let manager = manager(OutputBudget::default());
    let text = tool(&manager, "mcp_big_text");
    let cap_bytes = DEFAULT_OUTPUT_TOKENS * 4;
    for bytes in [1 << 10, 64 << 10, 99_000, 100_001, 1 << 20, 16 << 20] {
        let output = text
            .execute(json!({"bytes": bytes}), CallOptions::default())
            .unwrap();
        assert!(!output.is_error, "{bytes}: {:?}", output.failure);
        let whole = output.full_text();
        assert_eq!(whole.len(), bytes, "the host has the whole result");
        assert_eq!(output.result.text().len(), bytes);
        let shown = output.model_text();
        assert!(shown.len() <= cap_bytes, "{bytes}: {} shown", shown.len());
        let (head, notice) = split(&shown);
        if bytes <= cap_bytes {
            assert_eq!(shown, whole, "{bytes} fits");
            assert!(output.shown.is_none());
            continue;
        }
        let notice = notice.unwrap_or_else(|| panic!("{bytes}: no notice"));
        // Whole lines only: what is shown is a prefix that ends where a line did.
        assert!(whole.starts_with(head), "{bytes}");
        assert_eq!(
            whole.as_bytes()[head.len()],
            b'\n',
            "{bytes}: cut inside a line"
        );
        assert!(head.len() > cap_bytes / 2, "{bytes}: {} shown", head.len());
        let left = bytes - head.len();
        let grouped = |n: usize| {
            let s = n.to_string();
            let mut out = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        assert!(
            notice.starts_with(&format!(
                "[Output cut to about 25,000 tokens: {} of {} bytes",
                grouped(left),
                grouped(bytes)
            )),
            "{bytes}: {notice}"
        );
        assert!(
            notice.ends_with("left out; call the tool again asking for less (a narrower query, a page or a range).]"),
            "{notice}"
        );
    }
    manager.close();
}

#[test]
fn caps_per_server_and_none() {
    let budget = OutputBudget {
        tokens: Some(100),
        servers: BTreeMap::from([("open".to_owned(), None)]),
        ..OutputBudget::default()
    };
    let manager = manager(budget);
    let args = json!({"bytes": 10_000});
    let capped = tool(&manager, "mcp_big_text")
        .execute(args.clone(), CallOptions::default())
        .unwrap();
    let shown = capped.model_text();
    assert!(shown.len() <= 400, "{}", shown.len());
    let (head, notice) = split(&shown);
    assert!(notice.is_some() && !head.is_empty(), "{shown}");
    // Never inside a character: the head is valid text that ends a line of the original.
    assert!(capped.full_text().starts_with(head));
    let open = tool(&manager, "mcp_open_text")
        .execute(args, CallOptions::default())
        .unwrap();
    assert_eq!(open.model_text().len(), 10_000);
    assert!(open.shown.is_none());
    manager.close();

    let manager = self::manager(OutputBudget::unlimited());
    let whole = tool(&manager, "mcp_big_text")
        .execute(json!({"bytes": 1 << 20}), CallOptions::default())
        .unwrap();
    assert_eq!(whole.model_text().len(), 1 << 20);
    manager.close();
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The path a notice or a placeholder names after `marker`, up to `end`.
fn path_after(text: &str, marker: &str, end: char) -> std::path::PathBuf {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {text}"))
        + marker.len();
    let rest = &text[at..];
    rest[..rest.find(end).unwrap()].into()
}

#[test]
fn what_does_not_fit_is_written_to_a_private_temporary_file_removed_at_close() {
    let budget = OutputBudget {
        tokens: Some(1_000),
        spill: true,
        ..OutputBudget::default()
    };
    let manager = manager(budget);
    let output = tool(&manager, "mcp_big_text")
        .execute(json!({"bytes": 1 << 20}), CallOptions::default())
        .unwrap();
    let shown = output.model_text();
    assert!(shown.len() <= 4_000, "{}", shown.len());
    let file = path_after(&shown, "the whole output is in ", ']');
    let file = std::path::PathBuf::from(file.to_string_lossy().trim_end_matches('.'));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), output.full_text());
    #[cfg(unix)]
    {
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
    }
    // Binary content: each block in a file of its own, named in its placeholder.
    let rich = tool(&manager, "mcp_big_rich")
        .execute(json!({}), CallOptions::default())
        .unwrap();
    let shown = rich.model_text();
    let image = path_after(&shown, "[Image: image/png, 8 bytes, saved to ", ']');
    assert_eq!(std::fs::read(&image).unwrap(), b"\x89PNG\r\n\x1a\n");
    let audio = path_after(&shown, "[Audio: audio/wav, 4 bytes, saved to ", ']');
    assert_eq!(std::fs::read(&audio).unwrap(), b"RIFF");
    assert_eq!(image.parent(), file.parent());
    // The whole rendering still has the plain placeholders.
    assert!(rich.full_text().contains("[Image: image/png]"));
    let dir = file.parent().unwrap().to_owned();
    manager.close();
    assert!(!dir.exists(), "{} outlived the close", dir.display());
}

#[test]
fn a_directory_of_the_hosts_is_used_and_kept() {
    let dir = std::env::temp_dir().join(format!("mcp-budget-host-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let budget = OutputBudget {
        tokens: Some(500),
        spill: true,
        spill_dir: Some(dir.join("results")),
        ..OutputBudget::default()
    };
    let manager = manager(budget);
    let output = tool(&manager, "mcp_big_text")
        .execute(json!({"bytes": 100_000}), CallOptions::default())
        .unwrap();
    let shown = output.model_text();
    assert!(shown.contains(&format!(
        "the whole output is in {}",
        dir.join("results").display()
    )));
    manager.close();
    assert_eq!(std::fs::read_dir(dir.join("results")).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_subagents_proxies_keep_the_budget_too() {
    let manager = manager(OutputBudget::default());
    let proxies = mcp_runtime::host::subagent_tools(&manager, Duration::from_secs(60));
    let text = proxies
        .iter()
        .find(|t| t.name() == "mcp_big_text")
        .expect("the proxy of mcp_big_text");
    let output = text
        .execute(json!({"bytes": 1 << 20}), CallOptions::default())
        .unwrap();
    assert!(output.model_text().len() <= DEFAULT_OUTPUT_TOKENS * 4);
    assert_eq!(output.full_text().len(), 1 << 20);
    manager.close();
}
