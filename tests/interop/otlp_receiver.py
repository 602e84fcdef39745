"""A minimal OTLP/HTTP receiver for the OpenTelemetry tests: what our exporter sends, as JSON lines.

Standard library http.server plus the official protobuf messages (package opentelemetry-proto).
It takes POST /v1/traces and POST /v1/metrics as application/x-protobuf or application/json
(optionally gzip-encoded), answers 200 with an empty Export*ServiceResponse in the same content
type (400 for a body it cannot decode), and appends to OUT_FILE one line per span:
  {"name", "kind" (e.g. "CLIENT"), "trace_id" (32 hex), "span_id" (16 hex),
   "parent_span_id" (16 hex or null), "attributes": {key: value}, "service_name"}
and one line per metric: {"metric": name, "unit": unit}.

Usage: python otlp_receiver.py OUT_FILE
Listens on 127.0.0.1, a free port, printed as `PORT <n>` on stdout; exits when stdin closes.
"""
import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT_FILE = sys.argv[1]
write_lock = threading.Lock()

# OTLP/JSON writes ids as hex where protobuf's JSON mapping expects base64 for bytes fields.
ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def hex_ids_to_base64(node):
    if isinstance(node, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in ID_KEYS and isinstance(v, str)
            else hex_ids_to_base64(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hex_ids_to_base64(v) for v in node]
    return node


def any_value(v):
    """An OTLP AnyValue as a plain JSON value."""
    which = v.WhichOneof("value")
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, which) if which else None


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def span_lines(req):
    for rs in req.resource_spans:
        service = attributes(rs.resource.attributes).get("service.name")
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield {
                    "name": s.name,
                    "kind": s.SpanKind.Name(s.kind).removeprefix("SPAN_KIND_"),
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex() or None,
                    "attributes": attributes(s.attributes),
                    "service_name": service,
                }


def metric_lines(req):
    for rm in req.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                yield {"metric": m.name, "unit": m.unit}


ROUTES = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse, span_lines),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse, metric_lines),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as exporters expect

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return body
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def reply(self, status, content_type=None, body=b""):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        try:
            body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return self.reply(400)
        route = ROUTES.get(self.path.split("?")[0])
        if route is None:
            return self.reply(404)
        request_type, response_type, lines = route
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in ("application/x-protobuf", "application/json"):
            return self.reply(415)
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            if content_type == "application/json":
                doc = hex_ids_to_base64(json.loads(body))
                req = json_format.ParseDict(doc, request_type(), ignore_unknown_fields=True)
            else:
                req = request_type.FromString(body)
            records = list(lines(req))
        except Exception as e:  # any undecodable body: gzip, JSON, hex, protobuf
            return self.reply(400, "text/plain", f"bad body: {e}".encode())
        with write_lock, open(OUT_FILE, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
        response = response_type()
        if content_type == "application/json":
            self.reply(200, content_type, json_format.MessageToJson(response).encode())
        else:
            self.reply(200, content_type, response.SerializeToString())

    def log_message(self, format, *args):  # quiet: stderr belongs to the test's output
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"PORT {server.server_address[1]}", flush=True)
    # The owning test holds our stdin: when it closes (the test ended or died), so do we.
    while sys.stdin.buffer.read(65536):
        pass
    server.shutdown()
