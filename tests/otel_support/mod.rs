//! The telemetry tests' OpenTelemetry: the real SDK, installed once per test binary as the
//! global providers, with its in-memory span and metric exporters, and the W3C trace context
//! and baggage propagators. Each test runs under a root span of its own and reads only the
//! spans of its trace, so tests run in parallel.
#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use opentelemetry::trace::{TraceContextExt, TraceId, Tracer};
use opentelemetry::{global, Context, KeyValue};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

pub struct Sdk {
    pub spans: InMemorySpanExporter,
    pub metrics: InMemoryMetricExporter,
    pub meters: SdkMeterProvider,
}

/// The SDK, installed on first use.
pub fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        global::set_tracer_provider(tracer);
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        global::set_meter_provider(meters.clone());
        global::set_text_map_propagator(
            opentelemetry::propagation::TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ]),
        );
        Sdk {
            spans,
            metrics,
            meters,
        }
    })
}

/// A test's root span, current on this thread until it is dropped.
pub struct Root {
    pub cx: Context,
    _guard: opentelemetry::ContextGuard,
}

impl Root {
    pub fn start(name: &'static str) -> Root {
        sdk();
        let span = global::tracer("tests").start(name);
        let cx = Context::current_with_span(span);
        Root {
            _guard: cx.clone().attach(),
            cx,
        }
    }

    pub fn trace_id(&self) -> TraceId {
        self.cx.span().span_context().trace_id()
    }

    pub fn span_id(&self) -> opentelemetry::trace::SpanId {
        self.cx.span().span_context().span_id()
    }

    /// The ended spans of this trace.
    pub fn spans(&self) -> Vec<SpanData> {
        spans_of(self.trace_id())
    }

    /// The span of this trace named `name`, waited for (a span another thread ends).
    pub fn span(&self, name: &str) -> SpanData {
        wait_span(self.trace_id(), name)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

pub fn spans_of(trace: TraceId) -> Vec<SpanData> {
    sdk()
        .spans
        .get_finished_spans()
        .expect("the finished spans")
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

/// The span of `trace` named `name`, waiting up to 10 s for it to end.
pub fn wait_span(trace: TraceId, name: &str) -> SpanData {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let spans = spans_of(trace);
        if let Some(s) = spans.iter().find(|s| s.name == name) {
            return s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no span {name:?} in the trace; there are {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A span's attribute, as text.
pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    find(&span.attributes, key)
}

pub fn find(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The data points' attributes of histogram `name`, after a flush.
pub fn histogram_points(name: &str) -> Vec<(Vec<KeyValue>, u64)> {
    let sdk = sdk();
    sdk.meters.force_flush().expect("flush the metrics");
    let mut points = Vec::new();
    for rm in sdk.metrics.get_finished_metrics().expect("the metrics") {
        for sm in rm.scope_metrics() {
            for m in sm.metrics().filter(|m| m.name() == name) {
                assert_eq!(m.unit(), "s", "{name}'s unit");
                if let AggregatedMetrics::F64(MetricData::Histogram(h)) = m.data() {
                    for p in h.data_points() {
                        points.push((p.attributes().cloned().collect(), p.count()));
                    }
                }
            }
        }
    }
    points
}
