//! A sandboxed server's proxy goes out the way this process would: through the environment's
//! proxy (a real tinyproxy asking for Basic credentials here), never around it. This binary
//! has this one test, since it sets the process's proxy variables.
#![cfg(target_os = "linux")]

mod common;

use std::io::Write;
use std::net::TcpListener;

use mcp_runtime::transport::{Sandbox, StdioCommand};
use mcp_runtime::{Client, Endpoint, Error};
use serde_json::json;

#[test]
fn the_sandboxs_proxy_goes_through_the_environments_proxy_with_its_credentials() {
    let Some(upstream) =
        common::tinyproxy::Tinyproxy::start("sandbox-upstream", Some(("u", "secret")))
    else {
        return;
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"hello\n");
        }
    });
    // Set before any thread of the library reads them (the proxy reads them as a server
    // starts); `<-loopback>` sends loopback through the proxy too.
    std::env::set_var("HTTPS_PROXY", upstream.url(Some(("u", "secret"))));
    std::env::set_var("NO_PROXY", "<-loopback>");
    let mut command = StdioCommand::new(common::server_path(), ["--hostile-start"]);
    command.sandbox = Some(Sandbox {
        allowed_domains: vec!["127.0.0.1".into()],
        ..Sandbox::default()
    });
    let client = match Client::connect("upstream", &Endpoint::Stdio(command), common::options()) {
        Ok(client) => client,
        Err(Error::Sandbox { message, .. }) => {
            common::npm::missing::<()>(&format!("the sandbox cannot run here: {message}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let outcome = client
        .call_tool("attempt", json!({"proxy": format!("127.0.0.1:{port}")}))
        .unwrap()
        .text();
    assert!(outcome.contains("the far end said hello"), "{outcome}");
    assert!(
        upstream.tunnelled_to(port),
        "the tunnel went through the environment's proxy: {:?}",
        upstream.requests()
    );
    client.close();
}
