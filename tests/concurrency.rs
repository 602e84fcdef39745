//! Many threads on one connection: every caller gets its own answer.

mod common;

use std::sync::Barrier;
use std::time::{Duration, Instant};

use mcp_runtime::{CallOptions, CancelToken};
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
                        .call_tool("echo", json!({ "message": message }))
                        .unwrap();
                    assert_eq!(out.text(), message);
                }
            });
        }
    });
    // Nothing is left pending: one more call still works.
    let out = client.call_tool("add", json!({"a": 1, "b": 1})).unwrap();
    assert_eq!(out.text(), "2");
}

#[test]
fn callers_that_read_their_own_answers_and_callers_that_wait_never_lose_one() {
    const TIMEOUT: Duration = Duration::from_secs(20);
    // Plain calls may read their answers themselves; calls with a cancel token wait for another
    // reader. Mixed, with pauses so the reading changes hands often, every answer must arrive
    // well before the timeout.
    let client = common::connect("mixed", &[]);
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        for t in 0..8 {
            let client = client.clone();
            let barrier = &barrier;
            s.spawn(move || {
                barrier.wait();
                for i in 0..300 {
                    let message = format!("thread {t} call {i}");
                    let mut options = CallOptions::timeout(TIMEOUT);
                    if t % 3 == 0 {
                        options = options.with_cancel(CancelToken::new());
                    }
                    let started = Instant::now();
                    let out = client
                        .call_tool_with("echo", json!({ "message": message }), options)
                        .unwrap();
                    assert_eq!(out.text(), message);
                    // An answer that arrived but was noticed only at the deadline is a hang.
                    assert!(started.elapsed() < TIMEOUT, "call {i} of thread {t} hung");
                    if i % 50 == t {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
}
