"""One tool call through `mcpvisor serve` whose server asks for a form to be
filled in, or for the client's roots, answered by this client on the Python
`mcp` SDK (2.x); used by serve/tests/it/bridge.rs.

Usage: python_bridge.py <mode> <tool> <arguments-json> http <url>
       python_bridge.py <mode> <tool> <arguments-json> stdio <command> [args...]

<tool> names a tool to call, or as "prompt:<name>" a prompt to get.

<mode> is "legacy" (initialize at 2025-11-25: the gateway sends this client an
elicitation/create request) or "2026-07-28" (pinned, no fallback: the gateway
answers input_required and the SDK retries with the answers). The callback
fills every string field of the form from ANSWERS and accepts; the roots
callback answers ROOTS. Prints one JSON object: the call's text and error flag,
what the callbacks were asked, and any error.
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

ANSWERS = {"username": "ada", "email": "ada@example.com", "name": "Ada", "context": "the bridge"}
ROOTS = ["file:///work/bridge-project"]


def described(error: BaseException) -> str:
    """The error, and those a task group wraps (the SDK's come wrapped)."""
    inner = getattr(error, "exceptions", None)
    if inner:
        return "; ".join(described(e) for e in inner)
    return f"{type(error).__name__}: {error}"


async def main(mode: str, tool: str, arguments: dict, server) -> dict:
    out: dict = {"mode": mode, "asked": []}

    async def elicitation(context, params):
        schema = getattr(params, "requested_schema", None) or {}
        fields = list((schema.get("properties") or {}).keys())
        out["asked"].append({"message": getattr(params, "message", None), "fields": fields})
        content = {field: ANSWERS.get(field, "x") for field in fields}
        return types.ElicitResult(action="accept", content=content)

    async def list_roots(context):
        out["asked"].append({"roots": True})
        return types.ListRootsResult(roots=[types.Root(uri=uri, name="project") for uri in ROOTS])

    try:
        with anyio.fail_after(60):
            async with Client(
                server, mode=mode, elicitation_callback=elicitation, list_roots_callback=list_roots
            ) as client:
                out["protocol_version"] = client.protocol_version
                if tool.startswith("prompt:"):
                    got = await client.get_prompt(tool.removeprefix("prompt:"), arguments)
                    out["text"] = "".join(getattr(m.content, "text", "") for m in got.messages)
                else:
                    result = await client.call_tool(tool, arguments)
                    out["text"] = "".join(getattr(b, "text", "") for b in result.content)
                    out["is_error"] = bool(result.is_error)
    except Exception as error:  # noqa: BLE001 - reported in the JSON
        out["error"] = described(error)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 5 or args[3] not in ("http", "stdio"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    mode, tool, arguments = args[0], args[1], json.loads(args[2])
    if args[3] == "http":
        server = args[4]
    else:
        server = StdioServerParameters(command=args[4], args=args[5:], env=dict(os.environ), cwd=os.getcwd())
    print(json.dumps(anyio.run(main, mode, tool, arguments, server)), flush=True)
