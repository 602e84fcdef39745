//! OpenTelemetry export: when the standard variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_TRACES_EXPORTER=otlp`, and the same for metrics;
//! `OTEL_SDK_DISABLED=true` turns it all off), the command's spans and metrics go over
//! OTLP/HTTP (protobuf) to the collector, with the library's own HTTP exchange as the client (no
//! second HTTP stack, no async runtime). Flushed on every exit: the end of the command, a
//! failure, a signal.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry::global;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

/// The longest one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT` may ask for less).
const MAX_EXPORT: Duration = Duration::from_secs(10);

/// The providers installed, to be shut down (and so flushed) once.
static INSTALLED: Mutex<Option<(Option<SdkTracerProvider>, Option<SdkMeterProvider>)>> =
    Mutex::new(None);

/// Installs the exporters the environment asks for, before any connection (a connection takes
/// the providers installed when it connects).
pub fn install() {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return;
    }
    let wanted = |signal: &str| {
        let endpoint = env("OTEL_EXPORTER_OTLP_ENDPOINT")
            .or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")));
        match env(&format!("OTEL_{signal}_EXPORTER"))
            .as_deref()
            .map(str::trim)
        {
            Some("none") => false,
            Some("otlp") => true,
            Some(other) => {
                log::warn!("OTEL_{signal}_EXPORTER={other}: only otlp is supported; not exporting");
                false
            }
            None => endpoint.is_some(),
        }
    };
    let protocol = |signal: &str| {
        let p = env(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"))
            .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
        match p.as_deref().map(str::trim) {
            None | Some("http/protobuf") => true,
            Some(other) => {
                log::warn!("OTEL_EXPORTER_OTLP_PROTOCOL={other}: only http/protobuf is supported; not exporting");
                false
            }
        }
    };
    let mut resource = Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("mcp");
    }
    let resource = resource.build();
    let tracer = (wanted("TRACES") && protocol("TRACES"))
        .then(|| {
            SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(Exchange::new())
                .build()
                .map_err(|e| log::warn!("cannot export traces: {e}"))
                .ok()
        })
        .flatten()
        .map(|exporter| {
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource.clone())
                .build()
        });
    let meter = (wanted("METRICS") && protocol("METRICS"))
        .then(|| {
            MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(Exchange::new())
                .build()
                .map_err(|e| log::warn!("cannot export metrics: {e}"))
                .ok()
        })
        .flatten()
        .map(|exporter| {
            SdkMeterProvider::builder()
                .with_reader(PeriodicReader::builder(exporter).build())
                .with_resource(resource)
                .build()
        });
    if tracer.is_none() && meter.is_none() {
        return;
    }
    if let Some(t) = &tracer {
        global::set_tracer_provider(t.clone());
        global::set_text_map_propagator(TraceContextPropagator::new());
    }
    if let Some(m) = &meter {
        global::set_meter_provider(m.clone());
    }
    *INSTALLED.lock().unwrap_or_else(|p| p.into_inner()) = Some((tracer, meter));
    // A signal ends the command after closing its servers: the telemetry goes last.
    crate::signals::finally(shutdown);
}

/// Flushes and shuts the exporters down (once; bounded by the export timeout).
pub fn shutdown() {
    let installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner()).take();
    let Some((tracer, meter)) = installed else {
        return;
    };
    if let Some(t) = tracer {
        if let Err(e) = t.shutdown() {
            log::debug!("exporting the last spans: {e}");
        }
    }
    if let Some(m) = meter {
        if let Err(e) = m.shutdown() {
            log::debug!("exporting the last metrics: {e}");
        }
    }
}

/// The OTLP exporter's HTTP client: the library's exchange, one POST at a time, bounded.
#[derive(Debug)]
struct Exchange {
    timeout: Duration,
}

impl Exchange {
    fn new() -> Exchange {
        let ms = std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok());
        Exchange {
            timeout: ms.map_or(MAX_EXPORT, Duration::from_millis).min(MAX_EXPORT),
        }
    }

    fn send(&self, request: &Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let url = request.uri().to_string();
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
            .collect();
        let deadline = Instant::now() + self.timeout;
        let (status, body) = mcp_runtime::otlp::post(&url, &headers, request.body(), deadline)?;
        let response = Response::builder().status(status).body(Bytes::from(body))?;
        Ok(response)
    }
}

impl HttpClient for Exchange {
    // The trait is an `async_trait`: the exchange runs when the export asks for it, on the
    // exporter's own thread, and the future is ready at once.
    fn send_bytes<'a, 'b>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let outcome = self.send(&request);
        Box::pin(std::future::ready(outcome))
    }
}
