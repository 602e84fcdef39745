//! Windows: Streamable HTTP over a named pipe, as VS Code names such a server (`"url":
//! "pipe:///pipe/name#/mcp"` for `\\.\pipe\name`). The server is this test's own: a small
//! HTTP/1.1 MCP server on a named pipe (no MCP SDK runs under Wine here), with a session, a
//! tool, and a DELETE that is reported.
//!
//! Built for `x86_64-pc-windows-gnu` and run under Wine by `.ci/windows/run`; on other
//! systems this file is empty.
#![cfg(windows)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::windows::io::FromRawHandle;
use std::time::Duration;

use mcp_runtime::transport::HttpTarget;
use mcp_runtime::{Client, ConnectOptions, Endpoint};
use serde_json::{json, Value};

/// One request: method, headers (lower-case names), body.
type Request = (String, Vec<(String, String)>, Vec<u8>);

fn read_request(reader: &mut BufReader<File>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let method = line.split(' ').next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok().filter(|n| *n > 0)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let length = (headers.iter())
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((method, headers, body))
}

fn respond(out: &mut File, status: &str, extra: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)
}

/// Answers one connection's requests until it ends; a DELETE is told on `deleted`.
fn serve(pipe: File, deleted: &crossbeam_channel::Sender<()>) -> Option<()> {
    let mut out = pipe.try_clone().ok()?;
    let mut reader = BufReader::new(pipe);
    loop {
        let (method, _, body) = read_request(&mut reader)?;
        match method.as_str() {
            "GET" => respond(&mut out, "405 Method Not Allowed", "", b"").ok()?,
            "DELETE" => {
                let _ = deleted.send(());
                respond(&mut out, "200 OK", "", b"").ok()?
            }
            _ => {
                let message: Value = serde_json::from_slice(&body).ok()?;
                let Some(id) = message.get("id").cloned() else {
                    respond(&mut out, "202 Accepted", "", b"").ok()?;
                    continue;
                };
                let result = match message["method"].as_str()? {
                    "initialize" => json!({
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "pipe-server", "version": "1"}
                    }),
                    "tools/list" => json!({"tools": [
                        {"name": "echo", "inputSchema": {"type": "object"}}
                    ]}),
                    "tools/call" => json!({"content": [
                        {"type": "text", "text": message["params"]["arguments"]["message"]}
                    ]}),
                    _ => {
                        let error = json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "no such method"}});
                        respond(&mut out, "200 OK", "", error.to_string().as_bytes()).ok()?;
                        continue;
                    }
                };
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                respond(
                    &mut out,
                    "200 OK",
                    "Mcp-Session-Id: pipe-session\r\n",
                    reply.to_string().as_bytes(),
                )
                .ok()?
            }
        }
    }
}

/// Serves the named pipe `name` (`\\.\pipe\...`): each connection on a thread of its own.
fn listen(name: &str) -> crossbeam_channel::Receiver<()> {
    use windows_sys::Win32::Foundation::{
        GetLastError, ERROR_PIPE_CONNECTED, INVALID_HANDLE_VALUE,
    };
    use windows_sys::Win32::Storage::FileSystem::PIPE_ACCESS_DUPLEX;
    use windows_sys::Win32::System::Pipes::{
        ConnectNamedPipe, CreateNamedPipeW, PIPE_READMODE_BYTE, PIPE_TYPE_BYTE,
        PIPE_UNLIMITED_INSTANCES, PIPE_WAIT,
    };
    let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
    let (tx, rx) = crossbeam_channel::unbounded();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || loop {
        // SAFETY: a new instance of the pipe, owned by the `File` made of it below.
        let handle = unsafe {
            CreateNamedPipeW(
                wide.as_ptr(),
                PIPE_ACCESS_DUPLEX,
                PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT,
                PIPE_UNLIMITED_INSTANCES,
                64 * 1024,
                64 * 1024,
                0,
                std::ptr::null(),
            )
        };
        assert!(handle != INVALID_HANDLE_VALUE, "CreateNamedPipeW failed");
        let _ = ready_tx.try_send(());
        // SAFETY: waits for a client on the instance just made.
        let connected = unsafe { ConnectNamedPipe(handle, std::ptr::null_mut()) } != 0
            || unsafe { GetLastError() } == ERROR_PIPE_CONNECTED;
        // SAFETY: the instance's handle, owned from here on by the file.
        let pipe = unsafe { File::from_raw_handle(handle as _) };
        if connected {
            let tx = tx.clone();
            std::thread::spawn(move || serve(pipe, &tx));
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the pipe server started");
    rx
}

#[test]
fn a_server_on_a_named_pipe_has_a_session_and_tool_calls() {
    let short = format!("mcp-runtime-test-{}", std::process::id());
    let deleted = listen(&format!(r"\\.\pipe\{short}"));
    let options = ConnectOptions {
        timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(20),
        ..ConnectOptions::default()
    };
    let url = format!("pipe:///pipe/{short}#/mcp");
    let client = Client::connect("piped", &Endpoint::Http(HttpTarget::new(url)), options).unwrap();
    assert_eq!(client.transport_kind(), "http");
    assert_eq!(client.server_info().name, "pipe-server");
    assert_eq!(client.list_tools().unwrap()[0].name, "echo");
    for i in 0..3 {
        let out = client
            .call_tool("echo", json!({"message": format!("through the pipe {i}")}))
            .unwrap();
        assert_eq!(out.text(), format!("through the pipe {i}"));
    }
    client.close();
    deleted
        .recv_timeout(Duration::from_secs(10))
        .expect("the session was ended with a DELETE");
}

#[test]
fn a_pipe_nobody_serves_is_a_connection_failure_naming_it() {
    let url = format!(
        "pipe:///pipe/mcp-runtime-nobody-{}#/mcp",
        std::process::id()
    );
    let e = Client::connect(
        "nobody",
        &Endpoint::Http(HttpTarget::new(url)),
        ConnectOptions::default(),
    )
    .expect_err("nobody serves it");
    assert!(e.to_string().contains("mcp-runtime-nobody"), "{e}");
}
