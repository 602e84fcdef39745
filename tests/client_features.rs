//! Resources, templates, prompts, completions and the log level, over the in-memory pair.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::rpc::Call;
use mcp_runtime::protocol::RpcError;
use mcp_runtime::protocol::{CompletionRef, LoggingLevel};
use mcp_runtime::transport::memory_pair;
use mcp_runtime::{Client, ConnectOptions, Error};
use serde_json::{json, Value};

type Seen = Arc<Mutex<Vec<Call>>>;

/// A server declaring `capabilities`, answering each request with `answer(method, params)`.
fn server(
    capabilities: Value,
    answer: impl Fn(&str, &Value) -> Result<Value, RpcError> + Send + 'static,
) -> (Client, Seen) {
    let (connector, end) = memory_pair();
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        while let Ok(message) = end.receiver.recv() {
            let Some(request) = Call::of(&message) else {
                continue;
            };
            let params = request.params.clone().unwrap_or(Value::Null);
            let reply = if request.method == "initialize" {
                request.result(
                    json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                           "serverInfo": {"name": "features", "version": "1"}}),
                )
            } else {
                log.lock().unwrap().push(request.clone());
                request.answer(answer(&request.method, &params))
            };
            let _ = end.sender.send(reply);
        }
    });
    let options = ConnectOptions {
        timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        ..ConnectOptions::default()
    };
    (
        Client::with_transport("features", connector, options).unwrap(),
        seen,
    )
}

fn methods(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| r.method.clone())
        .collect()
}

#[test]
fn resources_and_templates_are_listed_across_pages_and_read_as_sent() {
    let (client, seen) = server(
        json!({"resources": {"subscribe": true}}),
        |method, params| match method {
            "resources/list" => Ok(match params.get("cursor").and_then(Value::as_str) {
                None => {
                    json!({"resources": [{"uri": "mem://a", "name": "a", "mimeType": "text/plain"}],
                               "nextCursor": "p2"})
                }
                Some("p2") => {
                    json!({"resources": [{"uri": "mem://b", "name": "b", "size": 3, "annotations": {"priority": 1}}]})
                }
                Some(_) => json!({"resources": []}),
            }),
            // A broken server: the same cursor again and again.
            "resources/templates/list" => Ok(json!({"resourceTemplates":
                [{"uriTemplate": "mem://{id}", "name": "by id"}], "nextCursor": "same"})),
            "resources/read" => Ok(json!({"contents": [
                {"uri": params["uri"], "mimeType": "text/plain", "text": "hello"},
                {"uri": params["uri"], "mimeType": "application/octet-stream", "blob": "AAEC"}
            ]})),
            "resources/subscribe" | "resources/unsubscribe" => Ok(json!({})),
            other => Err(RpcError::method_not_found(other)),
        },
    );
    let resources = client.list_resources().unwrap();
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        ["mem://a", "mem://b"]
    );
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(resources[1].size, Some(3));
    assert_eq!(resources[1].extra["annotations"], json!({"priority": 1}));
    let templates = client.list_resource_templates().unwrap();
    assert_eq!(templates.len(), 2, "the repeated cursor stops the listing");
    assert_eq!(templates[0].uri_template, "mem://{id}");
    let read = client.read_resource("mem://a").unwrap();
    assert_eq!(read.contents[0].text.as_deref(), Some("hello"));
    assert_eq!(read.contents[1].blob.as_deref(), Some("AAEC"));
    client.subscribe_resource("mem://a").unwrap();
    client.unsubscribe_resource("mem://a").unwrap();
    let sent = seen.lock().unwrap().clone();
    let read_params = sent
        .iter()
        .find(|r| r.method == "resources/read")
        .and_then(|r| r.params.clone());
    assert_eq!(read_params, Some(json!({"uri": "mem://a"})));
    assert_eq!(
        methods(&seen),
        [
            "resources/list",
            "resources/list",
            "resources/templates/list",
            "resources/templates/list",
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe"
        ]
    );
    client.close();
}

#[test]
fn prompts_completions_and_the_log_level() {
    let (client, seen) = server(
        json!({"prompts": {}, "completions": {}, "logging": {}}),
        |method, params| match method {
            "prompts/list" => Ok(
                json!({"prompts": [{"name": "greet", "description": "Say hi",
                "arguments": [{"name": "who", "required": true}]}]}),
            ),
            "prompts/get" => Ok(json!({"description": "a greeting", "messages": [
                {"role": "user", "content": {"type": "text", "text": format!("hi {}", params["arguments"]["who"].as_str().unwrap_or("?"))}}
            ]})),
            "completion/complete" => Ok(
                json!({"completion": {"values": ["alice", "alan"], "total": 2, "hasMore": false}}),
            ),
            "logging/setLevel" => Ok(json!({})),
            other => Err(RpcError::method_not_found(other)),
        },
    );
    let prompts = client.list_prompts().unwrap();
    assert_eq!(prompts[0].name, "greet");
    assert_eq!(prompts[0].arguments[0].required, Some(true));
    let prompt = client.get_prompt("greet", json!({"who": "bob"})).unwrap();
    assert_eq!(prompt.messages[0].role, "user");
    assert_eq!(prompt.messages[0].content.as_text(), Some("hi bob"));
    let done = client
        .complete(
            &CompletionRef::Prompt("greet".into()),
            "who",
            "al",
            Some(json!({"greeting": "hi"})),
        )
        .unwrap();
    assert_eq!(done.values, ["alice", "alan"]);
    assert_eq!(done.has_more, Some(false));
    client.set_log_level(LoggingLevel::Warning).unwrap();
    let sent = seen.lock().unwrap().clone();
    let params = |m: &str| {
        sent.iter()
            .find(|r| r.method == m)
            .and_then(|r| r.params.clone())
            .unwrap()
    };
    assert_eq!(
        params("completion/complete"),
        json!({"ref": {"type": "ref/prompt", "name": "greet"},
               "argument": {"name": "who", "value": "al"},
               "context": {"arguments": {"greeting": "hi"}}})
    );
    assert_eq!(params("logging/setLevel"), json!({"level": "warning"}));
    assert_eq!(
        params("prompts/get"),
        json!({"name": "greet", "arguments": {"who": "bob"}})
    );
    client.close();
}

#[test]
fn without_the_capability_nothing_is_sent() {
    let (client, seen) = server(json!({}), |method, _| {
        Err(RpcError::method_not_found(method))
    });
    assert!(client.list_resources().unwrap().is_empty());
    assert!(client.list_resource_templates().unwrap().is_empty());
    assert!(client.list_prompts().unwrap().is_empty());
    let err = client.read_resource("mem://a").unwrap_err();
    assert!(matches!(err, Error::Rpc { code: -32601, .. }), "{err:?}");
    let err = client
        .complete(
            &CompletionRef::Resource("mem://{id}".into()),
            "id",
            "",
            None,
        )
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32601));
    assert!(client.set_log_level(LoggingLevel::Info).is_err());
    assert!(methods(&seen).is_empty(), "{:?}", methods(&seen));
    client.close();
}
