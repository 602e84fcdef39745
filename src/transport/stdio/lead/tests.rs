//! The transitions of [`Lead`](super::Lead), one test each (see the table in `lead.rs`).

use super::*;

/// A clock that must not be read.
fn no_clock() -> Instant {
    panic!("the clock was read")
}

fn ms(t0: Instant, ms: u64) -> Instant {
    t0 + Duration::from_millis(ms)
}

/// A lead whose io thread reads (the start, after the linger).
fn reading(t0: Instant) -> Lead {
    let mut lead = Lead::new(t0);
    assert!(matches!(lead.io_turn(|| t0 + LINGER), IoTurn::Read));
    lead
}

/// A lead with a leader (elected at the start).
fn led(t0: Instant) -> Lead {
    let mut lead = Lead::new(t0);
    assert_eq!(lead.call(1, ms(t0, 5000), true, no_clock), Call::Lead);
    lead
}

#[test]
fn at_the_start_the_io_thread_is_parked_and_a_call_that_may_lead_leads() {
    let t0 = Instant::now();
    let mut lead = Lead::new(t0);
    assert!(matches!(lead.who, Who::Parked { since, .. } if since == t0));
    // Electing a leader reads no clock and lists nobody.
    assert_eq!(lead.call(1, ms(t0, 5000), true, no_clock), Call::Lead);
    assert!(matches!(lead.who, Who::Leader));
    assert!(lead.waiting.is_empty());
}

#[test]
fn linger_the_parked_io_thread_reads_once_linger_has_passed_since_the_start() {
    let t0 = Instant::now();
    let mut lead = Lead::new(t0);
    match lead.io_turn(|| ms(t0, 5)) {
        IoTurn::Wait(until) => assert_eq!(until, t0 + LINGER),
        other => panic!("{other:?}"),
    }
    assert!(matches!(lead.who, Who::Parked { .. }));
    assert!(matches!(lead.io_turn(|| t0 + LINGER), IoTurn::Read));
    assert!(matches!(lead.who, Who::Io { lead_wanted: false }));
    // Reading, it reads on without asking the clock.
    assert!(matches!(lead.io_turn(no_clock), IoTurn::Read));
}

#[test]
fn a_call_that_may_not_lead_wakes_the_parked_io_thread() {
    let t0 = Instant::now();
    let mut lead = Lead::new(t0);
    assert_eq!(
        lead.call(1, ms(t0, 5000), false, no_clock),
        Call::Wait { wake_io: true }
    );
    assert_eq!(lead.waiting, vec![(1, ms(t0, 5000))]);
    // It reads at once, before the linger is over.
    assert!(matches!(lead.io_turn(|| ms(t0, 1)), IoTurn::Read));
    assert!(!lead.resume);
}

#[test]
fn under_a_leader_calls_are_listed_and_the_io_thread_looks_again_each_linger() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    assert_eq!(
        lead.call(2, ms(t0, 5000), true, || ms(t0, 1)),
        Call::Wait { wake_io: false }
    );
    assert_eq!(
        lead.call(3, ms(t0, 5000), false, || ms(t0, 2)),
        Call::Wait { wake_io: false }
    );
    assert_eq!(lead.contended, Some(ms(t0, 2)));
    assert_eq!(lead.waiting.len(), 2);
    assert!(matches!(lead.who, Who::Leader));
    // Never while a caller leads, even when asked to read (close).
    lead.wake();
    match lead.io_turn(|| ms(t0, 100)) {
        IoTurn::Wait(until) => assert_eq!(until, ms(t0, 100) + LINGER),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_leader_that_leaves_with_nobody_waiting_parks_and_wakes_nobody() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    let left = ms(t0, 3);
    assert!(!lead.leader_leaves(left, None, None));
    assert!(matches!(lead.who, Who::Parked { since, .. } if since == left));
    match lead.io_turn(|| ms(t0, 4)) {
        IoTurn::Wait(until) => assert_eq!(until, left + LINGER),
        other => panic!("{other:?}"),
    }
    // The next call leads again.
    assert_eq!(lead.call(2, ms(t0, 5000), true, no_clock), Call::Lead);
}

#[test]
fn a_leader_hands_over_to_a_caller_still_waiting() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.call(2, ms(t0, 5000), false, || ms(t0, 1));
    assert!(lead.leader_leaves(ms(t0, 3), None, None));
    assert!(lead.resume);
    assert!(matches!(lead.io_turn(|| ms(t0, 4)), IoTurn::Read));
    assert_eq!(lead.waiting, vec![(2, ms(t0, 5000))]);
}

#[test]
fn a_caller_the_leader_answered_needs_no_hand_over() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.call(2, ms(t0, 5000), false, || ms(t0, 1));
    lead.answered(2);
    assert!(lead.waiting.is_empty());
    assert!(!lead.leader_leaves(ms(t0, 3), None, None));
    assert!(!lead.resume);
}

#[test]
fn a_caller_past_its_deadline_is_not_handed_over() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.call(2, ms(t0, 10), false, || ms(t0, 1));
    assert!(!lead.leader_leaves(ms(t0, 10), None, None));
    assert!(lead.waiting.is_empty());
}

#[test]
fn a_leader_whose_request_is_still_queued_hands_its_answer_over() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    assert!(lead.leader_leaves(ms(t0, 3), None, Some((1, ms(t0, 5000)))));
    assert_eq!(lead.waiting, vec![(1, ms(t0, 5000))]);
    assert!(matches!(lead.io_turn(|| ms(t0, 4)), IoTurn::Read));
}

#[test]
fn a_leader_that_saw_stdout_end_hands_the_teardown_to_the_io_thread() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    assert!(lead.leader_leaves(ms(t0, 3), Some(ReadEnd::Eof), None));
    // Meanwhile calls are not listed: the end fails them.
    assert_eq!(lead.call(2, ms(t0, 5000), true, no_clock), Call::Ending);
    assert_eq!(lead.call(3, ms(t0, 5000), false, no_clock), Call::Ending);
    assert!(lead.waiting.is_empty());
    assert!(matches!(lead.io_turn(no_clock), IoTurn::End(ReadEnd::Eof)));
    assert!(matches!(lead.who, Who::Io { lead_wanted: false }));
    lead.ended();
    assert!(matches!(lead.io_turn(no_clock), IoTurn::Stop));
}

#[test]
fn parking_the_reading_io_thread_parks_once_a_caller_asked_to_lead_and_was_answered() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    assert_eq!(
        lead.call(1, ms(t0, 5000), true, no_clock),
        Call::Wait { wake_io: false }
    );
    assert!(matches!(lead.who, Who::Io { lead_wanted: true }));
    // Its caller still waits: no parking yet.
    lead.io_read(|| ms(t0, 30));
    assert!(matches!(lead.who, Who::Io { lead_wanted: true }));
    lead.answered(1);
    lead.io_read(|| ms(t0, 31));
    assert!(matches!(lead.who, Who::Parked { since, .. } if since == ms(t0, 31)));
    assert_eq!(lead.call(2, ms(t0, 5000), true, no_clock), Call::Lead);
}

#[test]
fn the_reading_io_thread_does_not_park_unless_a_caller_asked_to_lead() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    assert_eq!(
        lead.call(1, ms(t0, 5000), false, no_clock),
        Call::Wait { wake_io: false }
    );
    lead.answered(1);
    // Nobody asked to lead: the clock is not even read.
    lead.io_read(no_clock);
    assert!(matches!(lead.who, Who::Io { lead_wanted: false }));
}

#[test]
fn a_close_while_reading_makes_a_parking_io_thread_read_again_at_once() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    lead.call(1, ms(t0, 5000), true, no_clock);
    lead.answered(1);
    lead.wake();
    lead.io_read(|| ms(t0, 30));
    assert!(matches!(lead.who, Who::Parked { .. }));
    assert!(matches!(lead.io_turn(|| ms(t0, 30)), IoTurn::Read));
}

#[test]
fn a_close_under_a_leader_wakes_the_io_thread_when_it_leaves() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.wake();
    assert!(lead.leader_leaves(ms(t0, 3), None, None));
    assert!(matches!(lead.io_turn(|| ms(t0, 3)), IoTurn::Read));
}

#[test]
fn shutdown_once_ended_the_io_thread_stops_and_calls_are_not_listed() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    lead.call(1, ms(t0, 5000), false, no_clock);
    lead.ended();
    assert!(matches!(lead.io_turn(no_clock), IoTurn::Stop));
    assert_eq!(lead.call(2, ms(t0, 5000), true, no_clock), Call::Ending);
    assert_eq!(lead.call(3, ms(t0, 5000), false, no_clock), Call::Ending);
    assert_eq!(lead.waiting.len(), 1);
    lead.wake();
    assert!(matches!(lead.io_turn(no_clock), IoTurn::Stop));
}

#[test]
fn a_long_list_drops_the_callers_past_their_deadline() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    for id in 0..PRUNE_AT as i64 {
        // Up to the limit, nobody is dropped.
        lead.call(id, ms(t0, 10), false, || ms(t0, 5));
    }
    assert_eq!(lead.waiting.len(), PRUNE_AT);
    lead.call(100, ms(t0, 5000), false, || ms(t0, 10));
    assert_eq!(lead.waiting, vec![(100, ms(t0, 5000))]);
}

#[test]
fn an_answer_to_nobody_listed_changes_nothing() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    lead.call(1, ms(t0, 5000), false, no_clock);
    lead.answered(7);
    assert_eq!(lead.waiting, vec![(1, ms(t0, 5000))]);
}
#[test]
fn a_call_alone_reads_no_clock_and_is_no_contention() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    // Nobody else in flight: listed without a clock, and nothing contended.
    lead.call(1, ms(t0, 5000), true, no_clock);
    assert_eq!(lead.contended, None);
    lead.answered(1);
    lead.io_read(|| ms(t0, 30));
    assert!(matches!(lead.who, Who::Parked { .. }));
}

#[test]
fn contention_after_calls_met_the_io_thread_parks_only_once_linger_passed_without_any() {
    let t0 = Instant::now();
    let mut lead = reading(t0);
    // Two callers in flight at once: the second meets the first.
    lead.call(1, ms(t0, 5000), true, || ms(t0, 1));
    lead.call(2, ms(t0, 5000), true, || ms(t0, 2));
    assert_eq!(lead.contended, Some(ms(t0, 2)));
    lead.answered(1);
    lead.answered(2);
    // Nobody waits and a caller asked to lead, but the contention is recent: it reads on.
    lead.io_read(|| ms(t0, 3));
    assert!(matches!(lead.who, Who::Io { lead_wanted: true }));
    // A caller alone is answered by the io thread meanwhile, and it parks once calm.
    lead.call(3, ms(t0, 5000), true, no_clock);
    lead.answered(3);
    lead.io_read(|| ms(t0, 2) + LINGER);
    assert!(matches!(lead.who, Who::Parked { .. }));
    // The first call to lead after contention reads the clock, to see it is over.
    assert_eq!(
        lead.call(4, ms(t0, 5000), true, || ms(t0, 2) + LINGER),
        Call::Lead
    );
}

#[test]
fn contention_a_call_listed_under_a_leader_keeps_the_io_thread_reading_after_the_hand_over() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.call(2, ms(t0, 5000), true, || ms(t0, 1));
    // The leader's own answer came first: it hands over to the io thread.
    assert!(lead.leader_leaves(ms(t0, 2), None, None));
    assert!(matches!(lead.io_turn(|| ms(t0, 3)), IoTurn::Read));
    // The next call meets the one still listed; the io thread does not park for it.
    lead.call(3, ms(t0, 5000), true, || ms(t0, 4));
    lead.answered(2);
    lead.answered(3);
    lead.io_read(|| ms(t0, 5));
    assert!(matches!(lead.who, Who::Io { lead_wanted: true }));
    lead.io_read(|| ms(t0, 4) + LINGER);
    assert!(matches!(lead.who, Who::Parked { .. }));
}
#[test]
fn contention_a_call_that_finds_the_io_thread_parked_soon_after_contention_wakes_it() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    // Contention under the leader, which then answers everyone and parks the io thread.
    lead.call(2, ms(t0, 5000), true, || ms(t0, 1));
    lead.answered(2);
    assert!(!lead.leader_leaves(ms(t0, 2), None, None));
    assert!(matches!(lead.who, Who::Parked { .. }));
    // Within LINGER of the contention: listed, and the io thread is woken to read.
    assert_eq!(
        lead.call(3, ms(t0, 5000), true, || ms(t0, 3)),
        Call::Wait { wake_io: true }
    );
    assert!(matches!(lead.io_turn(|| ms(t0, 3)), IoTurn::Read));
    assert!(matches!(lead.who, Who::Io { lead_wanted: true }));
    lead.answered(3);
    lead.io_read(|| ms(t0, 1) + LINGER);
    // Calm again: the io thread parks, and the next call leads (the contention forgotten).
    assert!(matches!(lead.who, Who::Parked { .. }));
    assert_eq!(
        lead.call(4, ms(t0, 5000), true, || ms(t0, 1) + LINGER),
        Call::Lead
    );
    assert_eq!(lead.contended, None);
    assert!(!lead.leader_leaves(ms(t0, 30), None, None));
    assert_eq!(lead.call(5, ms(t0, 5000), true, no_clock), Call::Lead);
}

#[test]
fn a_parked_lead_with_a_listed_caller_reads_the_clock_once_for_a_call_after_contention() {
    let t0 = Instant::now();
    let mut lead = led(t0);
    lead.call(2, ms(t0, 5000), true, || ms(t0, 1));
    // The leader leaves with caller 2 still listed: parked, resume asked.
    assert!(lead.leader_leaves(ms(t0, 2), None, None));
    let mut reads = 0;
    let call = lead.call(3, ms(t0, 5000), true, || {
        reads += 1;
        ms(t0, 3)
    });
    assert_eq!(call, Call::Wait { wake_io: true });
    assert_eq!(reads, 1);
    assert_eq!(lead.contended, Some(ms(t0, 3)));
}
