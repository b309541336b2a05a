"""A client of `mcpvisor serve` at MCP 2026-07-28 on the Python `mcp` SDK (2.x),
pinned to that revision (`Client(mode="2026-07-28")`: no probe, no fallback to
`initialize`), used by serve/tests/it/modern_clients.rs.

Usage: python_modern.py stdio <command> [args...]
       python_modern.py http <url>

The scenario: discover, list the tools, echo, progress, cancel a long sleep (by
leaving its scope: over HTTP the SDK closes the request's stream, over stdio it
sends notifications/cancelled), then crash the demo server with a
`subscriptions/listen` stream open and wait for its tools to come back. Prints
one JSON object on stdout; a failed step records its error text under "errors"
and the scenario goes on, so the exit code is 0 unless the arguments are wrong.
"""

import json
import os
import sys
import time
import traceback

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MODE = "2026-07-28"
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


def text_of(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Scenario:
    def __init__(self) -> None:
        self.out: dict = {"sdk": "python-mcp", "mode": MODE, "errors": []}
        self.list_changed = 0

    def fail(self, step: str, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else describe(error)
        self.out["errors"].append({"step": step, "error": text})

    async def step(self, name: str, body, timeout: float = STEP_TIMEOUT) -> bool:
        try:
            with anyio.fail_after(timeout):
                await body()
            return True
        except TimeoutError:
            self.fail(name, f"no answer within {timeout} s")
        except Exception as error:  # noqa: BLE001 - every failure is recorded
            self.fail(name, error)
        return False

    async def tool_names(self, client: Client) -> list[str]:
        result = await client.list_tools(cache_mode="bypass")
        return [tool.name for tool in result.tools]

    async def run(self, client: Client) -> None:
        out = self.out
        out["protocol_version"] = client.protocol_version

        async def discover() -> None:
            found = await client.session.discover()
            out["supported_versions"] = list(found.supported_versions)
            info = (found.meta or {}).get("io.modelcontextprotocol/serverInfo") or {}
            out["server_name"] = info.get("name")

        await self.step("discover", discover)

        async def list_tools() -> None:
            # serve may answer before the demo server is up: poll until its tools are there.
            names: list[str] = []
            while ECHO not in names:
                names = await self.tool_names(client)
                if ECHO not in names:
                    await anyio.sleep(0.1)
            out["tools"] = names

        await self.step("list_tools", list_tools, RECOVERY_TIMEOUT)

        async def echo() -> None:
            result = await client.call_tool(ECHO, {"text": "hello from python at 2026"})
            out["echo"] = {"text": text_of(result), "is_error": bool(result.is_error)}

        await self.step("echo", echo)

        progress_seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            progress_seen.append(progress)

        async def progress() -> None:
            result = await client.call_tool(
                "mcp__demo__progress", {"steps": 3, "delay_ms": 20}, progress_callback=on_progress
            )
            out["progress"] = {"count": len(progress_seen), "text": text_of(result)}

        await self.step("progress", progress)

        async def cancel() -> None:
            started = time.monotonic()
            completed = None
            with anyio.move_on_after(CANCEL_AFTER) as scope:
                result = await client.call_tool("mcp__demo__sleep", {"ms": SLEEP_MS})
                completed = {"text": text_of(result), "is_error": bool(result.is_error)}
            out["cancel"] = {
                "cancelled": scope.cancelled_caught,
                "completed": completed,
                "elapsed_ms": int((time.monotonic() - started) * 1000),
            }

        await self.step("cancel", cancel)

        async def after_cancel() -> None:
            result = await client.call_tool(ECHO, {"text": "after cancel"})
            out["echo_after_cancel"] = {"text": text_of(result), "is_error": bool(result.is_error)}

        await self.step("echo_after_cancel", after_cancel)

        async def upstream_cancellations() -> None:
            deadline = time.monotonic() + 5.0
            seen: list = []
            while True:
                result = await client.call_tool("mcp__demo__cancelled", {})
                seen = json.loads(text_of(result))
                if any(c.get("tool") == "sleep" for c in seen) or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.1)
            out["upstream_cancellations"] = seen

        await self.step("upstream_cancellations", upstream_cancellations)

        async def pid_before() -> None:
            result = await client.call_tool("mcp__demo__pid", {})
            out["pid_before"] = int(text_of(result))

        await self.step("pid_before", pid_before)

        async def crash_with_a_listener() -> None:
            async with client.listen(tools_list_changed=True) as subscription:
                out["listen_honored"] = bool(subscription.honored.tools_list_changed)
                result = await client.call_tool("mcp__demo__crash", {})
                out["crash"] = {"text": text_of(result), "is_error": bool(result.is_error)}
                names: list[str] = []
                async for _event in subscription:
                    self.list_changed += 1
                    names = await self.tool_names(client)
                    if ECHO in names:
                        break
                out["tools_after_crash"] = names

        await self.step("crash", crash_with_a_listener, RECOVERY_TIMEOUT)
        out["list_changed_after_crash"] = self.list_changed

        async def pid_after() -> None:
            result = await client.call_tool("mcp__demo__pid", {})
            out["pid_after"] = int(text_of(result))

        await self.step("pid_after", pid_after)


async def main(argv: list[str]) -> dict:
    scenario = Scenario()
    try:
        with anyio.fail_after(120):
            if argv[0] == "stdio":
                server = StdioServerParameters(
                    command=argv[1], args=argv[2:], env=dict(os.environ), cwd=os.getcwd()
                )
            else:
                authorization = os.environ.get("MCP_AUTHORIZATION")
                headers = {"Authorization": authorization} if authorization else None
                server = streamable_http_client(argv[1], http_client=create_mcp_http_client(headers=headers))
            async with Client(server, mode=MODE) as client:
                await scenario.run(client)
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
