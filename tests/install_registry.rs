//! The MCP Registry client against a registry of the test's own on 127.0.0.1 that serves the
//! `v0.1` API with the registry's own example entries (tests/data/registry): a search paged
//! by cursor, the query sent, versions, one version and the latest, statuses (a deprecated
//! entry given, a deleted one left out of searches and never planned), an entry that breaks
//! the schema left out, an administrator's allow-list, and the failures.

mod common;

use std::net::TcpListener;

use common::registry::{listed, TestRegistry};
use mcp_runtime::install::{Registry, Status};
use mcp_runtime::Error;
use serde_json::{json, Value};

/// The registry's entries: the latest of each, and an older version of with-package.json's.
fn entries() -> Vec<Value> {
    vec![
        listed(
            include_str!("data/registry/docs/brave-search.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/docs/pypi-weather.json"),
            "deprecated",
            true,
        ),
        // Breaks the schema: left out of a search, logged.
        listed(
            include_str!("data/registry/invalid/bad-name-pattern.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/docs/nuget.json"),
            "deleted",
            true,
        ),
        listed(
            include_str!("data/registry/valid/with-remote.json"),
            "active",
            true,
        ),
        listed(
            include_str!("data/registry/valid/with-package.json"),
            "active",
            true,
        ),
        older(),
    ]
}

/// An older version of with-package.json's server.
fn older() -> Value {
    let mut v = listed(
        include_str!("data/registry/valid/with-package.json"),
        "active",
        false,
    );
    v["server"]["version"] = json!("0.9.0");
    v["server"]["packages"][0]["version"] = json!("0.9.0");
    v
}

fn names(entries: &[mcp_runtime::install::ServerEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.name()).collect()
}

#[test]
fn a_search_pages_through_the_registry_by_cursor() {
    let server = TestRegistry::start(entries());
    let registry = Registry::new(&server.url).unwrap();
    let (first, next) = registry.search("", None).unwrap();
    // The entry that breaks the schema and the deleted one are left out.
    assert_eq!(
        names(&first),
        [
            "io.modelcontextprotocol.anonymous/brave-search",
            "io.github.example/weather-mcp"
        ]
    );
    assert_eq!(first[1].status(), Status::Deprecated);
    assert_eq!(first[0].status(), Status::Active);
    let next = next.expect("a second page");
    let (second, last) = registry.search("", Some(&next)).unwrap();
    assert_eq!(
        names(&second),
        [
            "io.github.user/remote-weather",
            "io.github.user/local-weather"
        ]
    );
    assert_eq!(last, None);
    let asked = server.requests();
    assert!(
        asked[0].starts_with("/v0.1/servers?version=latest&limit=30"),
        "{asked:?}"
    );
    assert!(
        asked[1].ends_with("&cursor=io.github.user%2Fremote-weather%3A2.1.0"),
        "the cursor goes back encoded: {asked:?}"
    );

    let (found, _) = registry.search("weather", None).unwrap();
    assert_eq!(
        names(&found),
        [
            "io.github.example/weather-mcp",
            "io.github.user/remote-weather",
            "io.github.user/local-weather"
        ]
    );
    assert!(server.requests()[2].contains("&search=weather"));
}

#[test]
fn a_server_s_versions_and_one_version_are_given_and_planned() {
    let server = TestRegistry::start(entries());
    let registry = Registry::new(&format!("{}/", server.url)).unwrap();
    let versions = registry.versions("io.github.user/local-weather").unwrap();
    let listed: Vec<&str> = versions.iter().map(|e| e.version()).collect();
    assert_eq!(listed, ["1.0.0", "0.9.0"]);

    let latest = registry.get("io.github.user/local-weather", None).unwrap();
    assert_eq!(latest.version(), "1.0.0");
    let pinned = registry
        .get("io.github.user/local-weather", Some("0.9.0"))
        .unwrap();
    let answers = [("env:API_KEY".to_owned(), "${API_KEY}".to_owned())].into();
    let config = pinned.plan(0, &answers).unwrap();
    assert_eq!(
        config.args[..2],
        ["-y", "@modelcontextprotocol/server-weather@0.9.0"]
    );
    // The name is one path segment.
    assert!(server
        .requests()
        .contains(&"/v0.1/servers/io.github.user%2Flocal-weather/versions/0.9.0".to_owned()));

    // A deleted entry is given with its status, and never planned.
    let deleted = registry
        .get("io.github.joelverhagen/knapcode-samplemcpserver", None)
        .unwrap();
    assert_eq!(deleted.status(), Status::Deleted);
    let Err(Error::Config { message }) = deleted.plan(0, &Default::default()) else {
        panic!("a deleted entry was planned");
    };
    assert!(
        message.contains("was deleted from the registry"),
        "{message}"
    );
}

#[test]
fn an_allow_list_leaves_other_servers_out() {
    let server = TestRegistry::start(entries());
    let registry = Registry::new(&server.url)
        .unwrap()
        .allow_only(["io.github.user/remote-weather"]);
    let (first, next) = registry.search("", None).unwrap();
    assert!(first.is_empty());
    let (second, _) = registry.search("", next.as_deref()).unwrap();
    assert_eq!(names(&second), ["io.github.user/remote-weather"]);

    let asked = server.requests().len();
    let Err(Error::Config { message }) = registry.get("io.github.user/local-weather", None) else {
        panic!("a server the policy does not allow was given");
    };
    assert!(
        message.contains("not among the servers the policy allows"),
        "{message}"
    );
    assert_eq!(
        server.requests().len(),
        asked,
        "nothing was asked of the registry"
    );
}

#[test]
fn failures_are_typed() {
    let server = TestRegistry::start(entries());
    let registry = Registry::new(&server.url).unwrap();
    let Err(Error::Config { message }) = registry.get("io.example/missing", None) else {
        panic!("a missing server was given");
    };
    assert!(
        message.ends_with("has no server io.example/missing"),
        "{message}"
    );
    let Err(Error::Config { message }) =
        registry.get("io.github.user/local-weather", Some("7.0.0"))
    else {
        panic!("a missing version was given");
    };
    assert!(
        message.ends_with("has no version 7.0.0 of io.github.user/local-weather"),
        "{message}"
    );

    let broken = Registry::new(&format!("{}/broken", server.url)).unwrap();
    match broken.search("", None) {
        Err(Error::Http {
            status: 500, body, ..
        }) => assert!(body.contains("down"), "{body}"),
        other => panic!("not an HTTP error: {other:?}"),
    }

    for bad in [
        "ftp://registry.example",
        "https://registry.example/?token=abc",
    ] {
        assert!(
            matches!(Registry::new(bad), Err(Error::Config { .. })),
            "{bad}"
        );
    }
    // Nothing listens there any more.
    let gone = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    assert!(matches!(
        Registry::new(&gone).unwrap().search("", None),
        Err(Error::Io { .. })
    ));
}

#[test]
fn credentials_in_the_registry_s_address_are_never_shown() {
    let gone = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://reader:hunter2@{}", listener.local_addr().unwrap())
    };
    let registry = Registry::new(&gone).unwrap();
    assert!(!format!("{registry:?}").contains("hunter2"));
    assert!(!registry.base_url().contains("hunter2"));
    let e = registry.search("", None).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
    let Err(Error::Config { message }) = Registry::new("https://reader:hunter2@x.example/?a=b")
    else {
        panic!("a registry address with a query was taken");
    };
    assert!(!message.contains("hunter2"), "{message}");
}
