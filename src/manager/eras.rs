//! The era each Streamable HTTP server config speaks, remembered for the manager's life and
//! found once when several connections to the same config start together (the specification's
//! "cache the era per HTTP origin", in memory, beside the tool cache's copy on disk).
//!
//! Single flight, as a plain map of [`Entry`]s with named transitions (no I/O under its lock,
//! which is a leaf: nothing else is taken or called while it is held):
//!
//! | entry | event | next | the connect |
//! |---|---|---|---|
//! | none | [`Eras::claim`] | `Probing` | probes, holding the [`Flight`] |
//! | `Probing` | [`Eras::claim`] | unchanged | waits (its own deadline, its cancel) for the flight, then claims again |
//! | `Known(v)` | [`Eras::claim`] | unchanged | skips the probe: `EraChoice::Remembered(v)` |
//! | `Probing` | [`Flight::found`] (the probe's verdict) | `Known(v)` | waiters wake |
//! | `Probing` | the [`Flight`] dropped without a verdict (the connect failed) | none | waiters wake; one of them probes |
//! | any | [`Eras::learn`] (a connect succeeded) | `Known(v)` | |
//!
//! A remembered era is an assumption, not a fact: a remembered handshake that fails is probed
//! afresh by the client (`EraChoice::Remembered`), and what the connection then speaks is
//! learnt here. Only the probe is shared: each connection still opens its own session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;

use crate::cancel::CancelToken;
use crate::protocol::ProtocolVersion;

/// What the manager knows of one config's era.
enum Entry {
    /// A connect is probing; its flight's sender drops when it is done (a verdict or not).
    Probing {
        /// Which flight (a later one may replace an abandoned one).
        flight: u64,
        done: Receiver<()>,
    },
    /// What the server spoke, or the probe found.
    Known(ProtocolVersion),
}

/// The eras of the manager's HTTP server configs, by config hash.
#[derive(Default)]
pub(super) struct Eras {
    map: Mutex<HashMap<String, Entry>>,
    next_flight: AtomicU64,
    /// How many connects wait on a flight (for the tests to wait on).
    #[cfg(test)]
    waiting: std::sync::atomic::AtomicUsize,
}

/// What a connect does about its era ([`Eras::claim`]).
pub(super) enum Claim {
    /// Skip the probe: the server speaks this.
    Known(ProtocolVersion),
    /// Probe, and tell the flight what was found.
    Probe(Flight),
    /// Probe on its own: waiting for another's probe ran out of time (or was cancelled, which
    /// the connect then sees itself).
    Alone,
}

/// The probing connect's hold on its config's entry; dropped without [`Flight::found`], the
/// entry is cleared and the waiters probe again.
pub(super) struct Flight {
    eras: Arc<Eras>,
    key: String,
    flight: u64,
    /// Dropped (waking the waiters) at the verdict or with the flight.
    done: Mutex<Option<Sender<()>>>,
}

impl Eras {
    /// The era of the config `key` for a connect that waits at most until `deadline` (and
    /// until `cancel`) for another connect's probe; true when it waited.
    pub(super) fn claim(
        self: &Arc<Self>,
        key: &str,
        deadline: Instant,
        cancel: Option<&CancelToken>,
    ) -> (Claim, bool) {
        let mut waited = false;
        let claim = loop {
            let done = {
                let mut map = self.map.lock();
                match map.get(key) {
                    Some(Entry::Known(v)) => break Claim::Known(*v),
                    Some(Entry::Probing { done, .. }) => done.clone(),
                    None => {
                        let flight = self.next_flight.fetch_add(1, Ordering::Relaxed);
                        let (tx, done) = crossbeam_channel::bounded(0);
                        map.insert(key.to_owned(), Entry::Probing { flight, done });
                        break Claim::Probe(Flight {
                            eras: Arc::clone(self),
                            key: key.to_owned(),
                            flight,
                            done: Mutex::new(Some(tx)),
                        });
                    }
                }
            };
            waited = true;
            let never = crossbeam_channel::never();
            let cancelled = cancel.map_or(&never, CancelToken::receiver);
            let left = deadline.saturating_duration_since(Instant::now());
            #[cfg(test)]
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let ended = select! {
                // Nothing is ever sent: the flight ended (found, or gave up). Look again.
                recv(done) -> _ => false,
                recv(cancelled) -> _ => true,
                default(left) => true,
            };
            #[cfg(test)]
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            if ended {
                break Claim::Alone;
            }
        };
        (claim, waited)
    }

    /// A connection to config `key` speaks `version`.
    pub(super) fn learn(&self, key: &str, version: ProtocolVersion) {
        self.map
            .lock()
            .insert(key.to_owned(), Entry::Known(version));
    }
}

impl Flight {
    /// The probe found `version`: the waiting connects go on with it.
    pub(super) fn found(&self, version: ProtocolVersion) {
        {
            let mut map = self.eras.map.lock();
            if self.is_current(&map) {
                map.insert(self.key.clone(), Entry::Known(version));
            }
        }
        self.done.lock().take();
    }

    fn is_current(&self, map: &HashMap<String, Entry>) -> bool {
        matches!(map.get(&self.key), Some(Entry::Probing { flight, .. }) if *flight == self.flight)
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        {
            let mut map = self.eras.map.lock();
            if self.is_current(&map) {
                map.remove(&self.key);
            }
        }
        self.done.lock().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn v2025() -> ProtocolVersion {
        ProtocolVersion::latest()
    }

    /// Until a connect waits on a flight (bounded, so a bug fails the test).
    fn until_one_waits(eras: &Eras) {
        let waiting = || eras.waiting.load(Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(10);
        while waiting() == 0 && Instant::now() < until {
            std::thread::yield_now();
        }
        assert_eq!(waiting(), 1);
    }

    #[test]
    fn the_first_connect_probes_and_its_verdict_spares_the_next_one_the_probe() {
        let eras = Arc::new(Eras::default());
        let (Claim::Probe(flight), false) = eras.claim("k", later(), None) else {
            panic!("the first connect probes")
        };
        flight.found(v2025());
        assert!(matches!(eras.claim("k", later(), None), (Claim::Known(v), false) if v == v2025()));
        // Dropping the flight after its verdict keeps it.
        drop(flight);
        assert!(matches!(
            eras.claim("k", later(), None),
            (Claim::Known(_), false)
        ));
        // Another config probes on its own.
        assert!(matches!(
            eras.claim("other", later(), None),
            (Claim::Probe(_), false)
        ));
    }

    #[test]
    fn a_connect_waits_for_the_probe_under_way_and_takes_its_verdict() {
        let eras = Arc::new(Eras::default());
        let (Claim::Probe(flight), false) = eras.claim("k", later(), None) else {
            panic!("the first connect probes")
        };
        let waiter = {
            let eras = Arc::clone(&eras);
            std::thread::spawn(move || eras.claim("k", later(), None))
        };
        until_one_waits(&eras);
        flight.found(v2025());
        assert!(matches!(waiter.join().unwrap(), (Claim::Known(v), true) if v == v2025()));
    }

    #[test]
    fn a_flight_that_ends_without_a_verdict_hands_the_probe_to_a_waiter() {
        let eras = Arc::new(Eras::default());
        let (Claim::Probe(flight), false) = eras.claim("k", later(), None) else {
            panic!("the first connect probes")
        };
        let waiter = {
            let eras = Arc::clone(&eras);
            std::thread::spawn(move || {
                matches!(eras.claim("k", later(), None), (Claim::Probe(_), true))
            })
        };
        until_one_waits(&eras);
        drop(flight);
        assert!(waiter.join().unwrap(), "the waiter probes in its place");
    }

    #[test]
    fn waiting_ends_at_the_deadline_or_the_cancel_and_the_connect_probes_alone() {
        let eras = Arc::new(Eras::default());
        let (Claim::Probe(_flight), false) = eras.claim("k", later(), None) else {
            panic!("the first connect probes")
        };
        assert!(matches!(
            eras.claim("k", Instant::now(), None),
            (Claim::Alone, true)
        ));
        let cancel = CancelToken::new();
        cancel.cancel();
        assert!(matches!(
            eras.claim("k", later(), Some(&cancel)),
            (Claim::Alone, true)
        ));
    }

    #[test]
    fn what_a_connection_spoke_is_learnt_and_an_old_flight_changes_nothing() {
        let eras = Arc::new(Eras::default());
        let (Claim::Probe(flight), false) = eras.claim("k", later(), None) else {
            panic!("the first connect probes")
        };
        let stateless = ProtocolVersion::latest_stateless();
        eras.learn("k", stateless);
        // The flight is no longer the entry's: its verdict and its end leave the fact alone.
        flight.found(v2025());
        drop(flight);
        assert!(
            matches!(eras.claim("k", later(), None), (Claim::Known(v), false) if v == stateless)
        );
    }
}
