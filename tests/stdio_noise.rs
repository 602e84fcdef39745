//! A stdio "server" that prints what is not JSON-RPC before it speaks (or instead of speaking):
//! the connect error says how many lines were skipped and quotes the first, masked; one that
//! prints only that for long is given up on at the documented bound, not at its timeout.

mod common;

use std::time::Duration;

use mcp_runtime::transport::StdioCommand;
use mcp_runtime::{Client, ConnectOptions, Endpoint, Error};

fn shell(script: &str, env: &[(&str, &str)]) -> Endpoint {
    Endpoint::Stdio(StdioCommand {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        cwd: None,
        sandbox: None,
    })
}

#[test]
fn a_banner_then_silence_times_out_saying_what_was_skipped_with_its_secrets_masked() {
    let endpoint = shell(
        "echo \"Starting with key $API_KEY, token=abc123\"; echo second; exec sleep 30",
        &[("API_KEY", "sk-live-0123456789")],
    );
    let options = ConnectOptions {
        timeout: Duration::from_millis(500),
        ..common::options()
    };
    let err = Client::connect("banner", &endpoint, options).unwrap_err();
    let Error::ConnectTimeout { skipped_stdout, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(
        skipped_stdout.as_ref(),
        Some(&(2, "Starting with key REDACTED, token=REDACTED".to_owned()))
    );
    let text = err.to_string();
    assert!(
        text.contains("printed 2 lines that are not JSON-RPC on stdout (the first: \"Starting"),
        "{text}"
    );
    assert!(
        !text.contains("sk-live") && !text.contains("abc123"),
        "{text}"
    );
}

#[test]
fn a_server_that_prints_only_garbage_is_given_up_on_at_the_bound_not_at_its_timeout() {
    // 1001 lines and then silence: a timeout of ten minutes would otherwise be waited out.
    let endpoint = shell(
        "i=0; while [ $i -le 1000 ]; do echo \"line $i\"; i=$((i+1)); done; exec sleep 600",
        &[],
    );
    let options = ConnectOptions {
        timeout: Duration::from_secs(600),
        ..common::options()
    };
    let err = Client::connect("chatty", &endpoint, options).unwrap_err();
    let Error::Protocol { message } = &err else {
        panic!("unexpected {err:?}");
    };
    assert!(
        message.contains("printed 1001 lines that are not JSON-RPC")
            && message.contains("the first: \"line 0\""),
        "{message}"
    );
}

#[test]
fn a_long_banner_under_the_bound_still_connects() {
    // A real server (the test server) answers; lines before it stay below the bound and the
    // connection works.
    let script = format!(
        "i=0; while [ $i -lt 900 ]; do echo \"banner $i\"; i=$((i+1)); done; exec {}",
        common::server_path()
    );
    let client = Client::connect("banner-ok", &shell(&script, &[]), common::options()).unwrap();
    assert!(!client.list_tools().unwrap().is_empty());
    client.close();
}
