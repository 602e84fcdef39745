//! Many threads on one connection: every caller gets its own answer.

mod common;

use std::sync::Barrier;

use mcp_runtime::CallOptions;
use serde_json::json;

#[test]
fn sixteen_threads_times_five_hundred_calls_each_get_their_own_answer() {
    let client = common::connect("shared", &[]);
    let barrier = Barrier::new(16);
    std::thread::scope(|s| {
        for t in 0..16 {
            let client = client.clone();
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                for i in 0..500 {
                    let message = format!("thread {t} call {i}");
                    let out = client
                        .call_tool(
                            "echo",
                            json!({ "message": message }),
                            CallOptions::default(),
                        )
                        .unwrap();
                    assert_eq!(out.text(), message);
                }
            });
        }
    });
    // Nothing is left pending: one more call still works.
    let out = client
        .call_tool("add", json!({"a": 1, "b": 1}), CallOptions::default())
        .unwrap();
    assert_eq!(out.text(), "2");
}
