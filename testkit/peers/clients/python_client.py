"""A client of `mcpvisor serve` on the Python `mcp` SDK (2.x), used by tests/gateway_clients.rs.

Usage: python_client.py stdio <command> [args...]
       python_client.py http <url>

Over stdio the SDK spawns <command> with this process's environment and working
directory. The scenario: initialize, list the tools, echo, progress, cancel a
long sleep, then crash the demo server and wait for its tools to come back.
Prints one JSON object on stdout with what each step saw; a failed step records
its error text under "errors" and the scenario goes on, so the exit code is 0
unless the arguments are wrong.
"""

import json
import os
import sys
import time
import traceback

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import mcp_types as types

ECHO = "mcp__demo__echo"
STEP_TIMEOUT = 15.0
RECOVERY_TIMEOUT = 20.0
CANCEL_AFTER = 1.0
SLEEP_MS = 30_000


def describe(error: BaseException) -> str:
    """The error and, for exception groups, every leaf, on one string."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


def text_of(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Scenario:
    def __init__(self) -> None:
        self.out: dict = {"sdk": "python-mcp", "errors": []}
        self.list_changed = 0
        self.list_changed_event = anyio.Event()

    def fail(self, step: str, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else describe(error)
        self.out["errors"].append({"step": step, "error": text})

    async def on_message(self, message) -> None:
        if isinstance(message, Exception):
            self.out.setdefault("transport_errors", []).append(describe(message))
            return
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.list_changed += 1
            self.list_changed_event.set()

    async def tool_names(self, session: ClientSession) -> list[str]:
        names: list[str] = []
        cursor = None
        for _ in range(100):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            names.extend(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return names

    async def tools_after_list_changed(self, session: ClientSession, seen: int) -> list[str]:
        """Re-lists on each list_changed past the `seen`th until the demo server's tools are there."""
        while True:
            while self.list_changed <= seen:
                self.list_changed_event = anyio.Event()
                if self.list_changed <= seen:
                    await self.list_changed_event.wait()
            seen = self.list_changed
            names = await self.tool_names(session)
            if ECHO in names:
                return names

    async def step(self, name: str, body, timeout: float = STEP_TIMEOUT) -> bool:
        """Runs `body()` within `timeout`; records a failure instead of raising."""
        try:
            with anyio.fail_after(timeout):
                await body()
            return True
        except TimeoutError:
            self.fail(name, f"no answer within {timeout} s")
        except Exception as error:  # noqa: BLE001 - every failure is recorded
            self.fail(name, error)
        return False

    async def run(self, session: ClientSession) -> None:
        out = self.out

        async def initialize() -> None:
            result = await session.initialize()
            out["protocol_version"] = result.protocol_version
            out["server_name"] = result.server_info.name

        if not await self.step("initialize", initialize):
            return

        async def list_tools() -> None:
            # serve may answer before the demo server is up: its tools then come with a list_changed.
            seen = self.list_changed
            names = await self.tool_names(session)
            out["tools_initial"] = names
            if ECHO not in names:
                names = await self.tools_after_list_changed(session, seen)
            out["tools"] = names

        await self.step("list_tools", list_tools, RECOVERY_TIMEOUT)

        async def echo() -> None:
            result = await session.call_tool(ECHO, {"text": "hello from python"})
            out["echo"] = {"text": text_of(result), "is_error": bool(result.is_error)}

        await self.step("echo", echo)

        progress_seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            progress_seen.append(progress)

        async def progress() -> None:
            result = await session.call_tool(
                "mcp__demo__progress", {"steps": 3, "delay_ms": 20}, progress_callback=on_progress
            )
            out["progress"] = {
                "count": len(progress_seen),
                "values": list(progress_seen),
                "text": text_of(result),
                "is_error": bool(result.is_error),
            }

        await self.step("progress", progress)

        async def cancel() -> None:
            started = time.monotonic()
            completed = None
            # Leaving the scope cancels the call: the SDK then sends notifications/cancelled.
            with anyio.move_on_after(CANCEL_AFTER) as scope:
                result = await session.call_tool("mcp__demo__sleep", {"ms": SLEEP_MS})
                completed = {"text": text_of(result), "is_error": bool(result.is_error)}
            out["cancel"] = {
                "cancelled": scope.cancelled_caught,
                "completed": completed,
                "elapsed_ms": int((time.monotonic() - started) * 1000),
            }

        await self.step("cancel", cancel)

        async def after_cancel() -> None:
            result = await session.call_tool(ECHO, {"text": "after cancel"})
            out["echo_after_cancel"] = {"text": text_of(result), "is_error": bool(result.is_error)}

        await self.step("echo_after_cancel", after_cancel)

        async def upstream_cancellations() -> None:
            # The cancellation reaches the demo server asynchronously: poll for it.
            deadline = time.monotonic() + 5.0
            seen: list = []
            while True:
                result = await session.call_tool("mcp__demo__cancelled", {})
                seen = json.loads(text_of(result))
                if any(c.get("tool") == "sleep" for c in seen) or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.1)
            out["upstream_cancellations"] = seen

        await self.step("upstream_cancellations", upstream_cancellations)

        async def pid_before() -> None:
            result = await session.call_tool("mcp__demo__pid", {})
            out["pid_before"] = int(text_of(result))

        await self.step("pid_before", pid_before)

        seen_before_crash = self.list_changed

        async def crash() -> None:
            result = await session.call_tool("mcp__demo__crash", {})
            out["crash"] = {"text": text_of(result), "is_error": bool(result.is_error)}

        await self.step("crash", crash)

        async def recover() -> None:
            out["tools_after_crash"] = await self.tools_after_list_changed(session, seen_before_crash)

        await self.step("recover", recover, RECOVERY_TIMEOUT)
        out["list_changed_after_crash"] = self.list_changed - seen_before_crash

        async def pid_after() -> None:
            result = await session.call_tool("mcp__demo__pid", {})
            out["pid_after"] = int(text_of(result))

        await self.step("pid_after", pid_after)


async def main(argv: list[str]) -> dict:
    scenario = Scenario()
    mode = argv[0]
    try:
        with anyio.fail_after(120):
            if mode == "stdio":
                params = StdioServerParameters(
                    command=argv[1], args=argv[2:], env=dict(os.environ), cwd=os.getcwd()
                )
                transport = stdio_client(params)
            else:
                # The gateway's bearer token, as a host's config would carry it.
                authorization = os.environ.get("MCP_AUTHORIZATION")
                headers = {"Authorization": authorization} if authorization else None
                transport = streamable_http_client(
                    argv[1], http_client=create_mcp_http_client(headers=headers)
                )
            async with transport as (read, write):
                async with ClientSession(read, write, message_handler=scenario.on_message) as session:
                    await scenario.run(session)
            scenario.out["closed"] = True
    except Exception as error:  # noqa: BLE001 - reported in the JSON
        scenario.fail("session", error)
        scenario.out["traceback"] = "".join(traceback.format_exception(error))
    return scenario.out


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 2 or args[0] not in ("stdio", "http"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    print(json.dumps(anyio.run(main, args)), flush=True)
