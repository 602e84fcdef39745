"""An MCP server on the official Python SDK (mcp 2.3.0) whose OpenTelemetry spans a test can read.

The cross-implementation tracing test: our client sends W3C `traceparent` in `params._meta`, and
the SDK's default `OpenTelemetryMiddleware` must make its SERVER span a child of our CLIENT span.
Each span that ends is appended to SPANS_FILE as one JSON line (flushed at once):
  {"name", "kind", "trace_id" (32 hex), "span_id" (16 hex), "parent_span_id" (16 hex or null),
   "attributes": {...}}

Usage: python otel_server.py stdio SPANS_FILE
       python otel_server.py http SPANS_FILE   (127.0.0.1, a free port, path /mcp; prints
                                                 `PORT <n>` on stdout once it serves)
"""
import json
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider


class JsonLinesProcessor(SpanProcessor):
    """Appends each ended span to a file as one JSON line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def on_end(self, span: ReadableSpan) -> None:
        ctx, parent = span.get_span_context(), span.parent
        record = {
            "name": span.name,
            "kind": span.kind.name,
            "trace_id": format(ctx.trace_id, "032x"),
            "span_id": format(ctx.span_id, "016x"),
            "parent_span_id": format(parent.span_id, "016x") if parent else None,
            "attributes": dict(span.attributes or {}),
        }
        # Opened per span so every line is on disk before the next request is answered.
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


# The SDK's tracer is a proxy on the global provider, so installing it here is all it takes: its
# tracing is on by default and stays a no-op only while no provider is set.
provider = TracerProvider()
provider.add_span_processor(JsonLinesProcessor(sys.argv[2]))
trace.set_tracer_provider(provider)

mcp = MCPServer("otel-interop", log_level="WARNING")


@mcp.tool()
def echo(message: str) -> str:
    """Echoes the message"""
    return message


async def serve_http() -> None:
    # Bind port 0 ourselves so the port is known before uvicorn takes the socket; uvicorn's
    # access log would go to stdout, which carries only the PORT line.
    sock = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(mcp.streamable_http_app(), log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        while not server.started:
            await anyio.sleep(0.01)
        print(f"PORT {sock.getsockname()[1]}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        anyio.run(serve_http)
    else:
        mcp.run()
