"""The Python SDK's server (python_server.py, stdio) as a server of MCP 2026-07-28 only.

The SDK's server accepts both eras and has no switch for one; this stands in
front of it and answers `initialize` as a 2026-07-28-only server does (-32022,
naming the revisions it speaks), passing every other line through unchanged.

Usage: modern_only.py
"""

import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))

server = subprocess.Popen(
    [sys.executable, os.path.join(HERE, "python_server.py"), "stdio"],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
)
lock = threading.Lock()


def write(line: bytes) -> None:
    with lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def relay_out() -> None:
    for line in server.stdout:
        write(line)
    os._exit(0)


threading.Thread(target=relay_out, daemon=True).start()
for line in sys.stdin.buffer:
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("method") == "initialize":
        refusal = {
            "jsonrpc": "2.0",
            "id": message.get("id"),
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"],
                         "requested": message.get("params", {}).get("protocolVersion")},
            },
        }
        write((json.dumps(refusal) + "\n").encode())
        continue
    if isinstance(message, dict) and message.get("method") == "notifications/initialized":
        continue
    server.stdin.write(line)
    server.stdin.flush()
server.stdin.close()
server.wait()
