"""A small MCP server on the Python SDK (mcp 2.x, MCPServer), used by the interop tests.

Usage: python_server.py [stdio|http-sse|http-json] [port]

`http-json` answers POSTs with application/json, `http-sse` with text/event-stream.
"""

import asyncio
import sys

import anyio
import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp import UrlElicitationRequiredError
from mcp.types import Completion, Icon
from mcp_types import ElicitRequestURLParams
from pydantic import BaseModel, Field

server = MCPServer("mcpvisor-interop-python")

# One icon a client may show, and one that would run script if it did.
ICONS = [
    Icon(src="https://example.com/echo.png", mime_type="image/png", sizes=["48x48"]),
    Icon(src="javascript:alert(1)"),
]


@server.tool(icons=ICONS)
def echo(message: str) -> str:
    """Echo the message back."""
    return f"Echo: {message}"


@server.tool()
async def sleep(ms: int) -> str:
    """Answer after `ms` milliseconds (for deadlines)."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def announce(ctx: Context) -> str:
    """Send a tools/list_changed notification outside any request: on the GET
    stream of a 2025 session, on the subscriptions/listen streams at 2026-07-28."""
    session = ctx.session

    async def later() -> None:
        await anyio.sleep(0.2)
        try:
            await session.send_tool_list_changed()
        except Exception:  # no session to send on at 2026-07-28
            pass
        try:
            await ctx.notify_tools_changed()
        except Exception:  # no listen streams before 2026-07-28
            pass

    _background.append(asyncio.get_running_loop().create_task(later()))
    return "announced"


@server.tool()
async def add_prompt(name: str, ctx: Context) -> str:
    """Add a prompt called `name`, then say the prompts changed."""

    def made() -> str:
        return f"The {name} prompt"

    server.prompt(name=name, description=f"Added at run time: {name}")(made)
    await ctx.session.send_prompt_list_changed()
    return f"added {name}"


@server.resource("note://greeting", mime_type="text/plain", icons=ICONS)
def greeting() -> str:
    """A fixed note."""
    return "Hello from the Python SDK"


@server.resource("note://hostile", mime_type="text/plain")
def hostile() -> str:
    """Text that would retitle a terminal and move its cursor if printed raw."""
    return "before\x1b]0;pwned\x07\x1b[2Aafter"


@server.resource("note://{name}")
def note(name: str) -> str:
    """A note made from its name."""
    return f"Note {name}"


@server.prompt(icons=ICONS)
def review(code: str, language: str = "rust") -> str:
    """Ask for a review of some code."""
    return f"Please review this {language} code:\n{code}"


@server.completion()
async def complete(ref, argument, context):
    if argument.name == "language":
        return Completion(values=[v for v in ["python", "ruby", "rust"] if v.startswith(argument.value)])
    return None


class Confirm(BaseModel):
    confirm: bool = Field(description="Delete it?")
    reason: str = Field(default="none given", description="Why")


@server.tool()
async def confirm_round(path: str, ctx: Context):
    """Ask the person before pretending to delete a file, in MCP 2026-07-28's
    way: the first round answers with a question (input_required) and a
    state; the retry carries the answer and the state back."""
    answers = ctx.input_responses or {}
    answer = answers.get("confirm")
    if answer is None:
        return mcp_types.InputRequiredResult(
            input_requests={
                "confirm": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Delete {path}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"confirm": {"type": "boolean"}},
                            "required": ["confirm"],
                        },
                    )
                )
            },
            request_state=f"py-delete:{path}",
        )
    content = getattr(answer, "content", None) or {}
    if ctx.request_state != f"py-delete:{path}":
        return f"state lost: {ctx.request_state!r}"
    return f"deleted {path}" if content.get("confirm") else f"kept {path}"


@server.tool()
async def confirm_delete(path: str, ctx: Context) -> str:
    """Ask the person (elicitation) before pretending to delete a file."""
    result = await ctx.elicit(f"Delete {path}?", Confirm)
    if result.action == "accept" and result.data.confirm:
        return f"deleted {path} ({result.data.reason})"
    return f"kept {path} ({result.action})"


@server.tool()
async def connect_account(url: str, ctx: Context) -> str:
    """Send the person to a page (URL-mode elicitation); when they went, say it completed."""
    result = await ctx.elicit_url("Connect your account to continue", url, "py-connect-1")
    if result.action == "accept":
        session = ctx.session

        async def later() -> None:
            await anyio.sleep(0.2)
            await session.send_elicit_complete("py-never-asked")
            await session.send_elicit_complete("py-connect-1")

        _background.append(asyncio.get_running_loop().create_task(later()))
    return f"connect: {result.action}"


@server.tool()
async def needs_connection(ctx: Context) -> str:
    """Refuse until the person has been to a page (-32042, URL elicitation required);
    say a little later that they have been."""
    session = ctx.session

    async def later() -> None:
        await anyio.sleep(0.3)
        await session.send_elicit_complete("py-files-7")

    _background.append(asyncio.get_running_loop().create_task(later()))
    raise UrlElicitationRequiredError(
        [
            ElicitRequestURLParams(
                message="Authorize access to your files",
                url="https://files.example.com/authorize?request=7",
                elicitation_id="py-files-7",
            )
        ]
    )


_background: list = []

if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    else:
        port = int(sys.argv[2]) if len(sys.argv) > 2 else 3201
        # http-stateless: the SDK's stateless mode (no session ids; JSON answers).
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            json_response=transport in ("http-json", "http-stateless"),
            stateless_http=transport == "http-stateless",
        )
