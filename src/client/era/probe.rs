//! Which era a server speaks: the sans-IO state machine of the stdio probe (and the verdicts of
//! the HTTP one), tested transition by transition.
//!
//! The probe's first message is `server/discover` with our preferred stateless version. What
//! comes back decides:
//! - a `DiscoverResult`: stateless, at the newest version both sides speak;
//! - `-32022` with `data.supported`: stateless at the newest common version (discover again with
//!   it: once more even when it is the version just refused, as the spec asks a client to retry
//!   with a version from the intersection; never a third time), or, when the only common version
//!   is a handshake one, the handshake;
//! - any other error, or silence within the probe timeout: the handshake, on the same process;
//! - the process exited or closed its stdout (servers built on rmcp exit on any request before
//!   `initialize`): the handshake, on a fresh process.
//!
//! A server slow to start (a Python server importing its framework on a loaded machine) can be
//! silent past the probe timeout and still be stateless. Its answer to `initialize` then says
//! so: `-32022` naming a stateless version we speak sends the probe back to `server/discover`
//! at that version, once.
//!
//! The machine never does I/O: its driver (`negotiate`) sends what a [`Step`] asks for and
//! feeds back what happened as a [`ProbeEvent`].

use serde_json::Value;

use crate::error::Error;
use crate::protocol::stateless::{supported_versions_of, UNSUPPORTED_PROTOCOL_VERSION};
use crate::protocol::{DiscoverResult, ProtocolVersion, STATELESS_PROTOCOL_VERSIONS};
use crate::protocol::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

/// What happened to the last `server/discover` the probe sent.
#[derive(Debug)]
pub(crate) enum ProbeEvent<'a> {
    /// A result.
    Answered(&'a Value),
    /// A JSON-RPC error.
    Refused {
        /// Its code.
        code: i64,
        /// Its `data`.
        data: Option<&'a Value>,
    },
    /// No answer within the probe timeout; the server is still there.
    Silent,
    /// The process exited or closed its stdout.
    Gone,
}

/// What the probe's driver does next.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Send `server/discover` with this stateless version in `_meta`.
    Discover(ProtocolVersion),
    /// The server speaks this stateless version; its discovery says the rest.
    Stateless(ProtocolVersion, Box<DiscoverResult>),
    /// Run the `initialize` handshake; on a fresh process first when `respawn`.
    Handshake {
        /// The process is gone (or unusable): start a new one before `initialize`.
        respawn: bool,
    },
    /// No common version: connecting fails with this.
    Fail(Error),
}

/// The stdio era probe.
#[derive(Debug)]
pub(crate) struct Probe {
    /// The stateless versions already offered.
    tried: Vec<ProtocolVersion>,
    /// Whether a version already offered was offered once more (a `-32022` that names the very
    /// version it refused gets one retry, not a loop).
    retried: bool,
    /// Whether `initialize` was refused as by a stateless server, and discovery tried again.
    rediscovered: bool,
}

impl Probe {
    /// A probe and its first step (`server/discover` at our newest stateless version).
    pub(crate) fn start() -> (Probe, Step) {
        let first = ProtocolVersion::latest_stateless();
        (
            Probe {
                tried: vec![first],
                retried: false,
                rediscovered: false,
            },
            Step::Discover(first),
        )
    }

    /// The next step after `event`.
    pub(crate) fn on(&mut self, event: ProbeEvent<'_>) -> Step {
        match event {
            ProbeEvent::Answered(value) => {
                match serde_json::from_value::<DiscoverResult>(value.clone()) {
                    Ok(discover) => {
                        let Some(version) = newest_stateless(&discover.supported_versions) else {
                            return self.without_stateless(&discover.supported_versions);
                        };
                        Step::Stateless(version, Box::new(discover))
                    }
                    // Not a DiscoverResult: a server that answers any method with something.
                    Err(_) => Step::Handshake { respawn: false },
                }
            }
            ProbeEvent::Refused { code, data } if code == UNSUPPORTED_PROTOCOL_VERSION => {
                let Some(supported) = supported_versions_of(data) else {
                    return Step::Handshake { respawn: false };
                };
                match newest_stateless(&supported) {
                    Some(v) if !self.tried.contains(&v) => {
                        self.tried.push(v);
                        Step::Discover(v)
                    }
                    Some(v) if !self.retried => {
                        self.retried = true;
                        Step::Discover(v)
                    }
                    _ => self.without_stateless(&supported),
                }
            }
            ProbeEvent::Refused { .. } | ProbeEvent::Silent => Step::Handshake { respawn: false },
            ProbeEvent::Gone => Step::Handshake { respawn: true },
        }
    }

    /// The next step after the handshake a [`Step::Handshake`] asked for was refused with
    /// `-32022` and this `data`: `server/discover` at the newest stateless version it names
    /// that we speak (once), or `None` when the refusal stands.
    pub(crate) fn on_initialize_refused(&mut self, data: Option<&Value>) -> Option<Step> {
        if self.rediscovered {
            return None;
        }
        let version = newest_stateless(&supported_versions_of(data)?)?;
        self.rediscovered = true;
        Some(Step::Discover(version))
    }

    /// The server named its versions and no stateless one is common (or left to try): the
    /// handshake if a handshake version is common, else failure naming both lists.
    fn without_stateless(&self, supported: &[String]) -> Step {
        if supported
            .iter()
            .any(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()))
        {
            return Step::Handshake { respawn: false };
        }
        let requested: Vec<&str> = STATELESS_PROTOCOL_VERSIONS
            .iter()
            .chain(std::iter::once(&LATEST_PROTOCOL_VERSION))
            .copied()
            .collect();
        Step::Fail(Error::UnsupportedProtocolVersion {
            requested: requested.join(", "),
            received: if supported.is_empty() {
                "none".to_owned()
            } else {
                supported.join(", ")
            },
        })
    }
}

/// The newest stateless version in `offered` that we speak.
pub(crate) fn newest_stateless(offered: &[String]) -> Option<ProtocolVersion> {
    STATELESS_PROTOCOL_VERSIONS
        .iter()
        .find(|ours| offered.iter().any(|v| v == *ours))
        .and_then(|v| ProtocolVersion::parse(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn discover(versions: &[&str]) -> Value {
        json!({"resultType": "complete", "supportedVersions": versions, "capabilities": {"tools": {}}})
    }

    #[test]
    fn the_first_step_offers_our_newest_stateless_version() {
        let (_, step) = Probe::start();
        assert_eq!(step, Step::Discover(ProtocolVersion::V2026_07_28));
    }

    #[test]
    fn a_discover_result_means_stateless_at_the_common_version() {
        let (mut probe, _) = Probe::start();
        let value = discover(&["2027-01-01", "2026-07-28", "2025-11-25"]);
        match probe.on(ProbeEvent::Answered(&value)) {
            Step::Stateless(v, d) => {
                assert_eq!(v, ProtocolVersion::V2026_07_28);
                assert!(d.capabilities.tools.is_some());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_discover_result_with_only_handshake_versions_means_the_handshake() {
        let (mut probe, _) = Probe::start();
        let value = discover(&["2025-06-18"]);
        assert_eq!(
            probe.on(ProbeEvent::Answered(&value)),
            Step::Handshake { respawn: false }
        );
    }

    #[test]
    fn a_discover_result_with_nothing_common_fails_naming_both_lists() {
        let (mut probe, _) = Probe::start();
        let value = discover(&["2099-01-01"]);
        let Step::Fail(e) = probe.on(ProbeEvent::Answered(&value)) else {
            panic!()
        };
        let text = e.to_string();
        assert!(
            text.contains("2099-01-01") && text.contains("2026-07-28"),
            "{text}"
        );
    }

    #[test]
    fn a_result_that_is_no_discovery_means_the_handshake() {
        let (mut probe, _) = Probe::start();
        assert_eq!(
            probe.on(ProbeEvent::Answered(&json!({}))),
            Step::Handshake { respawn: false }
        );
    }

    #[test]
    fn unsupported_version_with_a_handshake_version_means_the_handshake_on_the_same_process() {
        let (mut probe, _) = Probe::start();
        let data = json!({"supported": ["2025-11-25"], "requested": "2026-07-28"});
        assert_eq!(
            probe.on(ProbeEvent::Refused {
                code: -32022,
                data: Some(&data)
            }),
            Step::Handshake { respawn: false }
        );
    }

    #[test]
    fn unsupported_version_naming_the_version_refused_is_retried_once_not_forever() {
        let (mut probe, first) = Probe::start();
        let data = json!({"supported": ["2026-07-28", "2099-01-01"]});
        let refused = || ProbeEvent::Refused {
            code: -32022,
            data: Some(&data),
        };
        assert_eq!(
            probe.on(refused()),
            first,
            "one retry from the intersection"
        );
        let step = probe.on(refused());
        let Step::Fail(Error::UnsupportedProtocolVersion { received, .. }) = step else {
            panic!("{step:?}")
        };
        assert_eq!(received, "2026-07-28, 2099-01-01");
    }

    #[test]
    fn unsupported_version_without_a_list_is_not_stateless_evidence() {
        let (mut probe, _) = Probe::start();
        assert_eq!(
            probe.on(ProbeEvent::Refused {
                code: -32022,
                data: None
            }),
            Step::Handshake { respawn: false }
        );
    }

    #[test]
    fn any_other_error_or_silence_means_the_handshake_on_the_same_process() {
        for code in [-32601, -32602, -32600, -32001, -32000] {
            let (mut probe, _) = Probe::start();
            assert_eq!(
                probe.on(ProbeEvent::Refused { code, data: None }),
                Step::Handshake { respawn: false },
                "{code}"
            );
        }
        let (mut probe, _) = Probe::start();
        assert_eq!(
            probe.on(ProbeEvent::Silent),
            Step::Handshake { respawn: false }
        );
    }

    #[test]
    fn a_server_that_went_away_is_respawned_for_the_handshake() {
        let (mut probe, _) = Probe::start();
        assert_eq!(
            probe.on(ProbeEvent::Gone),
            Step::Handshake { respawn: true }
        );
    }

    #[test]
    fn initialize_refused_by_a_slow_stateless_server_sends_the_probe_back_to_discovery_once() {
        let (mut probe, first) = Probe::start();
        assert_eq!(
            probe.on(ProbeEvent::Silent),
            Step::Handshake { respawn: false }
        );
        let data = json!({"supported": ["2026-07-28"], "requested": "2025-11-25"});
        assert_eq!(probe.on_initialize_refused(Some(&data)), Some(first));
        assert_eq!(probe.on_initialize_refused(Some(&data)), None, "only once");
    }

    #[test]
    fn initialize_refused_without_a_stateless_version_of_ours_stands() {
        let (mut probe, _) = Probe::start();
        probe.on(ProbeEvent::Silent);
        for data in [
            json!({"supported": ["2025-06-18"]}),
            json!({"supported": ["2099-01-01"]}),
            json!({}),
        ] {
            assert_eq!(probe.on_initialize_refused(Some(&data)), None, "{data}");
        }
        assert_eq!(probe.on_initialize_refused(None), None);
    }

    #[test]
    fn newest_common_prefers_ours_in_order() {
        assert_eq!(
            newest_stateless(&["2026-07-28".into()]),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(newest_stateless(&["2025-11-25".into()]), None);
    }
}
