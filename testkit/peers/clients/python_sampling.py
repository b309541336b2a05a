"""A client of `mcpvisor serve --stdio` on the Python `mcp` SDK that answers
sampling and elicitation, used by tests/serve_forwarding.rs.

Usage: python_sampling.py <offer|offer-all|bare> <command> [args...]

With `offer` it declares sampling and elicitation (callbacks that answer with
fixed text and a form's single field) and calls server-everything's sampling
tool through the gateway; with `bare` it declares neither and calls the sampling
and elicitation tools; with `offer-all` it declares both and calls both tools
(the gateway must speak 2025-06-18 or later for the SDK to take elicitation).
It prints one JSON object: each tool's text, whether it
was an error, and what the callbacks saw.
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
import mcp_types as types

SAMPLING = "mcp__everything__trigger-sampling-request"
ELICITATION = "mcp__everything__trigger-elicitation-request"


async def main() -> None:
    mode, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    seen: dict = {"sampling": [], "elicitation": []}

    async def sampling(context, params: types.CreateMessageRequestParams):
        seen["sampling"].append(params.max_tokens)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the downstream client"),
            model="downstream-model",
            stop_reason="endTurn",
        )

    async def elicitation(context, params):
        seen["elicitation"].append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    offers = mode in ("offer", "offer-all")
    callbacks = {"sampling_callback": sampling, "elicitation_callback": elicitation} if offers else {}
    out: dict = {"seen": seen}
    server = StdioServerParameters(command=command, args=args)
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, **callbacks) as session:
                await session.initialize()
                tools = await session.list_tools()
                out["tools"] = [t.name for t in tools.tools]
                calls = [("sampling", SAMPLING, {"prompt": "hello", "maxTokens": 7})]
                # The SDK takes elicitation only from servers on protocol 2025-06-18 or
                # later, and the gateway speaks 2025-03-26 downstream: the refusal is
                # tested without the capability only.
                out["protocol"] = session.protocol_version if hasattr(session, "protocol_version") else None
                if mode in ("bare", "offer-all"):
                    calls.append(("elicitation", ELICITATION, {}))
                for key, name, arguments in calls:
                    result = await session.call_tool(name, arguments)
                    out[key] = {
                        "text": "".join(getattr(b, "text", "") for b in result.content),
                        "is_error": bool(result.is_error),
                    }
    print(json.dumps(out))


anyio.run(main)
