"""A client of `mcpvisor serve --stdio` on the Python `mcp` SDK that takes
URL-mode elicitation, used by tests/serve_forwarding.rs.

Usage: python_url_elicitation.py <command> [args...]

It declares forms and URL mode (the SDK does when given an elicitation
callback), consents to every URL, calls the Python peer's `connect_account`
through the gateway, waits for the completion notice, then calls
`needs_connection` (which answers -32042). It prints one JSON object: what the
callback saw, the completion notices, and both outcomes.
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
import mcp_types as types

PAGE = "https://accounts.example.com/connect?session=4"


async def main() -> None:
    command, args = sys.argv[1], sys.argv[2:]
    seen: list = []
    completed: list = []
    done = anyio.Event()
    events = [done]

    async def elicitation(context, params):
        seen.append(params.model_dump(by_alias=True, exclude_none=True, mode="json"))
        return types.ElicitResult(action="accept")

    async def messages(message):
        root = getattr(message, "root", message)
        if isinstance(root, types.ElicitCompleteNotification):
            completed.append(root.params.elicitation_id)
            events[-1].set()

    out: dict = {"seen": seen, "completed": completed}
    server = StdioServerParameters(command=command, args=args)
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(
                read, write, elicitation_callback=elicitation, message_handler=messages
            ) as session:
                await session.initialize()
                result = await session.call_tool("mcp__py__connect_account", {"url": PAGE})
                out["connect"] = "".join(getattr(b, "text", "") for b in result.content)
                with anyio.move_on_after(5):
                    await done.wait()
                    # Give a stray notice time to arrive, if one were forwarded.
                    await anyio.sleep(0.3)
                done = anyio.Event()
                events.append(done)
                try:
                    await session.call_tool("mcp__py__needs_connection", {})
                    out["needs"] = "no error"
                except MCPError as e:
                    out["needs"] = {"code": e.error.code, "data": e.error.data}
                with anyio.move_on_after(5):
                    await done.wait()
    print(json.dumps(out))


anyio.run(main)
