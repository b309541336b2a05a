"""One tool call through `mcpvisor serve` whose server asks for a form to be
filled in, answered by this client on the Python `mcp` SDK (2.x); used by
serve/tests/it/bridge.rs.

Usage: python_bridge.py <mode> <url> <tool> [arguments-json]

<mode> is "legacy" (initialize at 2025-11-25: the gateway sends this client an
elicitation/create request) or "2026-07-28" (pinned, no fallback: the gateway
answers input_required and the SDK retries with the answers). The callback
fills every string field of the form from ANSWERS and accepts. Prints one JSON
object: the call's text and error flag, what the callback was asked, and any
error.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.client.client import Client

ANSWERS = {"username": "ada", "email": "ada@example.com", "name": "Ada"}


async def main(mode: str, url: str, tool: str, arguments: dict) -> dict:
    out: dict = {"mode": mode, "asked": []}

    async def elicitation(context, params):
        schema = getattr(params, "requested_schema", None) or {}
        fields = list((schema.get("properties") or {}).keys())
        out["asked"].append({"message": getattr(params, "message", None), "fields": fields})
        content = {field: ANSWERS.get(field, "x") for field in fields}
        return types.ElicitResult(action="accept", content=content)

    try:
        with anyio.fail_after(60):
            async with Client(url, mode=mode, elicitation_callback=elicitation) as client:
                out["protocol_version"] = client.protocol_version
                result = await client.call_tool(tool, arguments)
                out["text"] = "".join(getattr(b, "text", "") for b in result.content)
                out["is_error"] = bool(result.is_error)
    except Exception as error:  # noqa: BLE001 - reported in the JSON
        out["error"] = f"{type(error).__name__}: {error}"
    return out


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    arguments = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    print(json.dumps(anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], arguments)), flush=True)
