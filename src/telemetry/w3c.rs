//! The trace context in and out of a message: through the propagator the host configured
//! (OpenTelemetry's global one), with W3C Trace Context (`traceparent`, `tracestate`) written
//! and read by hand when the host configured none, since SEP-414 names exactly those keys of
//! `_meta`; `baggage` only when the host allows it.

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{global, Context};
use serde_json::{Map, Value};

/// The entries of `cx` as the propagator writes them (sorted by name), with W3C Trace Context
/// when it writes none, and without `baggage` unless `baggage`.
pub(super) fn inject(cx: &Context, baggage: bool) -> Vec<(String, String)> {
    let mut entries = Entries::default();
    global::get_text_map_propagator(|p| p.inject_context(cx, &mut entries));
    let span = cx.span();
    let sc = span.span_context();
    if sc.is_valid() && !entries.0.iter().any(|(k, _)| k == "traceparent") {
        entries.set("traceparent", traceparent(sc));
        let state = sc.trace_state().header();
        if !state.is_empty() {
            entries.set("tracestate", state);
        }
    }
    if !baggage {
        entries.0.retain(|(k, _)| k != "baggage");
    }
    entries.0.sort();
    entries.0
}

/// The context a message's `_meta` carries, through the propagator, else W3C Trace Context
/// read by hand; `None` without a valid one.
pub(super) fn extract(meta: &Map<String, Value>) -> Option<Context> {
    let fields: HashMap<String, String> = meta
        .iter()
        .filter_map(|(k, v)| Some((k.to_ascii_lowercase(), v.as_str()?.to_owned())))
        .collect();
    let cx = global::get_text_map_propagator(|p| p.extract(&Fields(&fields)));
    if cx.span().span_context().is_valid() {
        return Some(cx);
    }
    let sc = parse(fields.get("traceparent")?, fields.get("tracestate"))?;
    Some(Context::new().with_remote_span_context(sc))
}

/// `00-{trace id}-{span id}-{flags}`.
pub(super) fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{:032x}-{:016x}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags()
    )
}

/// A `traceparent` (version 00, or a later one read as 00 allows) and its `tracestate`.
pub(super) fn parse(traceparent: &str, tracestate: Option<&String>) -> Option<SpanContext> {
    let parts: Vec<&str> = traceparent.trim().split('-').collect();
    let [version, trace, span, flags, ..] = parts[..] else {
        return None;
    };
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !hex(version, 2) || version == "ff" || (version == "00" && parts.len() != 4) {
        return None;
    }
    if !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    let state = tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let sc = SpanContext::new(trace_id, span_id, TraceFlags::new(flags & 1), true, state);
    sc.is_valid().then_some(sc)
}

/// What an injector collects.
#[derive(Default)]
struct Entries(Vec<(String, String)>);

impl Entries {
    fn set(&mut self, key: &str, value: String) {
        self.0.retain(|(k, _)| k != key);
        self.0.push((key.to_owned(), value));
    }
}

impl Injector for Entries {
    fn set(&mut self, key: &str, value: String) {
        Entries::set(self, &key.to_ascii_lowercase(), value);
    }
}

struct Fields<'a>(&'a HashMap<String, String>);

impl Extractor for Fields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(&key.to_ascii_lowercase()).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trip() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let state = "rojo=00f067aa0ba902b7".to_owned();
        let sc = parse(text, Some(&state)).unwrap();
        assert!(sc.is_remote() && sc.is_sampled());
        assert_eq!(traceparent(&sc), text);
        assert_eq!(sc.trace_state().header(), state);
    }

    #[test]
    fn bad_traceparents_are_none() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad, None).is_none(), "{bad:?}");
        }
        // A later version may add fields.
        assert!(parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            None
        )
        .is_some());
    }

    #[test]
    fn without_a_propagator_w3c_is_written_and_baggage_left_out() {
        let sc = parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
            None,
        )
        .unwrap();
        let cx = Context::new().with_remote_span_context(sc.clone());
        let entries = inject(&cx, false);
        assert_eq!(
            entries,
            [(
                "traceparent".to_owned(),
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00".to_owned()
            )]
        );
        let meta = Map::from_iter([(
            "traceparent".to_owned(),
            Value::from("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
        )]);
        let back = extract(&meta).unwrap();
        assert_eq!(back.span().span_context().span_id(), sc.span_id());
        assert!(extract(&Map::new()).is_none());
    }
}
