"""A client of `mcpvisor serve --stdio` on the Python `mcp` SDK that uses the
gateway's resources, templates, prompts, completion and subscriptions, used by
tests/serve_offered.rs.

Usage: python_resources.py <command> [args...]

It prints one JSON object with what it saw.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

DOC = "demo://resource/static/document/architecture.md"


async def main() -> None:
    command, args = sys.argv[1], sys.argv[2:]
    updated = anyio.Event()
    seen_updates: list = []

    async def on_message(message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen_updates.append(message.params.uri)
            updated.set()

    out: dict = {}
    server = StdioServerParameters(command=command, args=args)
    with anyio.fail_after(60):
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                init = await session.initialize()
                out["protocol"] = init.protocol_version

                def srcs(item):
                    return [i.src for i in (item.icons or [])]

                listed = await session.list_tools()
                icons = {"tool": next((srcs(t) for t in listed.tools if t.name == "mcp__py__echo"), None)}
                out["capabilities"] = init.capabilities.model_dump(by_alias=True, exclude_none=True)
                resources = await session.list_resources()
                out["resources"] = [
                    {"uri": str(r.uri), "server": (r.meta or {}).get("mcpvisor/server")} for r in resources.resources
                ]
                templates = await session.list_resource_templates()
                out["templates"] = [t.uri_template for t in templates.resource_templates]
                reads = {}
                for uri in ["note://greeting", "note://cats", DOC]:
                    got = await session.read_resource(uri)
                    reads[uri] = getattr(got.contents[0], "text", None)
                out["reads"] = reads
                try:
                    await session.read_resource("nowhere://at/all")
                    out["missing"] = "read"
                except Exception as e:  # the gateway's error, as the SDK raises it
                    out["missing"] = str(e)
                prompts = await session.list_prompts()
                out["prompts"] = [p.name for p in prompts.prompts]
                icons["prompt"] = next((srcs(p) for p in prompts.prompts if p.name == "mcp__py__review"), None)
                icons["resource"] = next(
                    (srcs(r) for r in resources.resources if str(r.uri) == "note://greeting"), None
                )
                out["icons"] = icons
                got = await session.get_prompt("mcp__py__review", {"code": "fn main() {}"})
                out["prompt"] = got.messages[0].content.text
                done = await session.complete(
                    types.PromptReference(type="ref/prompt", name="mcp__everything__completable-prompt"),
                    {"name": "department", "value": "S"},
                )
                out["completion"] = done.completion.values
                await session.subscribe_resource(DOC)
                await session.call_tool("mcp__everything__toggle-subscriber-updates", {})
                with anyio.fail_after(30):
                    await updated.wait()
                out["updates"] = seen_updates[:1]
    print(json.dumps(out))


anyio.run(main)
