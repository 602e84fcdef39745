"""A FastMCP 4.2 server for the interop tests: one `echo` tool.

Usage: python fastmcp_server.py stdio | http PORT  (HTTP listens on 127.0.0.1 only)
"""
import sys

from fastmcp import FastMCP

mcp = FastMCP("fastmcp-interop")


@mcp.tool
def echo(message: str) -> str:
    """Echoes the message"""
    return message


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(show_banner=False)
