//! Replies whose parsed form is many times their text: a result is read straight into its
//! type (no tree of `Value`s in between), and one that would unfold past
//! `MAX_RESULT_VALUES` values is refused with a protocol error while the connection goes on.
//! Peak memory is measured on a child process (`mcp-test-host --call`), so the other tests of
//! this binary do not count.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_runtime::{CallOptions, Error, MAX_RESULT_VALUES};
use serde_json::json;

/// Runs one call in a child host; its output and its peak resident memory in MiB.
fn call_in_child(tool: &str, count: usize) -> (String, u64) {
    let out = Command::new(common::example_path("mcp-test-host"))
        .args([
            "--call",
            common::server_path(),
            tool,
            &json!({ "count": count }).to_string(),
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let (result, peak) = text.trim().rsplit_once('\n').expect("two lines");
    let kib: u64 = peak.strip_prefix("peak_kib=").unwrap().parse().unwrap();
    (result.to_owned(), kib / 1024)
}

#[test]
fn many_small_content_blocks_are_read_without_a_tree_of_values() {
    // 600,000 blocks of `{"type":"text","text":"x"}`: 16 MB of text, 3 million counted values.
    // As `Value` objects they took about 950 bytes each (over 500 MiB at the peak); read
    // straight into typed blocks, about 110.
    let (out, peak_mib) = call_in_child("wide", 600_000);
    assert_eq!(out, "blocks=600000");
    assert!(peak_mib < 300, "peak {peak_mib} MiB for a 16 MB reply");
}

#[test]
fn a_result_that_would_unfold_past_the_budget_is_refused_and_the_connection_goes_on() {
    let client = common::connect("budget", &[]);
    let count = MAX_RESULT_VALUES + 1000;
    let err = client
        .call_tool_with(
            "numbers",
            json!({ "count": count }),
            CallOptions::timeout(Duration::from_secs(60)),
        )
        .unwrap_err();
    match &err {
        Error::Protocol { message } => assert!(
            message.contains("tools/call result") && message.contains("JSON values"),
            "{message}"
        ),
        other => panic!("unexpected {other:?}"),
    }
    let echo = client
        .call_tool("echo", json!({"message": "still here"}))
        .unwrap();
    assert_eq!(echo.text(), "still here");
    assert!(client.closed_reason().is_none());
}

#[test]
fn a_structured_result_within_the_budget_is_read_whole() {
    let (out, peak_mib) = call_in_child("numbers", 1_000_000);
    assert_eq!(out, "blocks=0");
    // A million numbers as `Value`s: 32 MiB, and the vector's growth on top.
    assert!(peak_mib < 300, "peak {peak_mib} MiB");
}
