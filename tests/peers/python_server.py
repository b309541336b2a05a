"""A small MCP server on the Python SDK (mcp 2.x, MCPServer), used by the interop tests.

Usage: python_server.py [stdio|streamable-http] [port]
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("mcpvisor-interop-python")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return f"Echo: {message}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        port = int(sys.argv[2]) if len(sys.argv) > 2 else 3201
        server.run("streamable-http", host="127.0.0.1", port=port, json_response=True)
