"""mcpvisor's conformance fixture: an MCP server on the Python SDK (mcp 2.x,
MCPServer) that offers the tools, resources, prompts and behaviours the MCP
conformance suite's SERVER scenarios ask for, under the names the suite uses.

One process serves both protocol eras:

- 2025-11-25 (and earlier): the initialize handshake and `Mcp-Session-Id`
  sessions of Streamable HTTP, with server-to-client requests (sampling,
  elicitation) and notifications on the request's stream;
- 2026-07-28: stateless requests carrying their own `_meta`, `server/discover`,
  `input_required` results for the multi-round-trip flow, `subscriptions/listen`,
  and caching hints.

The SDK picks the era per request (HTTP: from the `MCP-Protocol-Version`
header; stdio: from the first message), so the server is built once in the
SDK's stateful mode and nothing here branches on the transport.

Usage:
    python conformance_fixture.py http PORT    # Streamable HTTP on http://127.0.0.1:PORT/mcp
    python conformance_fixture.py stdio        # newline-delimited JSON-RPC on stdin/stdout

Run against the suite by scripts/conformance_fixture.sh.
"""

from __future__ import annotations

import base64
import json
import sys
import warnings
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import Field

# Logging, sampling and roots are deprecated at 2026-07-28 (SEP-2577) but are
# what the 2025-11-25 scenarios test; the SDK warns on every use.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

# A 1x1 red PNG and a minimal WAV, the suite's own test payloads.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# SEP-1613/SEP-2106: a tool listed with this JSON Schema 2020-12 inputSchema,
# keywords intact. MCPServer derives a tool's inputSchema from the function's
# signature and has no decorator argument for a hand-written one, so this tool
# is built as a `Tool` with its `parameters` replaced and handed to the
# constructor; arguments are still validated against the signature.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,  # noqa: N803 (the schema's names)
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)."""
    given = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    return "JSON Schema 2020-12 tool called with: " + json.dumps({k: v for k, v in given.items() if v is not None})


RAW_SCHEMA_TOOL = Tool.from_function(json_schema_2020_12_tool, structured_output=False).model_copy(
    update={"parameters": JSON_SCHEMA_2020_12}
)

# SEP-2549: the cacheable results carry freshness hints (2026-07-28 only; the
# SDK leaves them off handshake-era results).
LIST_HINT = CacheHint(ttl_ms=300_000, scope="public")
server = MCPServer(
    "mcpvisor-conformance-fixture",
    version="1.0.0",
    tools=[RAW_SCHEMA_TOOL],
    cache_hints={
        "server/discover": CacheHint(ttl_ms=0, scope="public"),
        "tools/list": LIST_HINT,
        "prompts/list": LIST_HINT,
        "resources/list": LIST_HINT,
        "resources/templates/list": LIST_HINT,
        "resources/read": CacheHint(ttl_ms=300_000, scope="private"),
    },
)


def tool():
    """Register a tool whose result is its content only (no outputSchema or
    structuredContent derived from the return annotation)."""
    return server.tool(structured_output=False)


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


# ---------------------------------------------------------------- content tools


@tool()
def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@tool()
def test_image_content() -> types.ImageContent:
    """Tests image content response."""
    return types.ImageContent(type="image", data=PNG, mime_type="image/png")


@tool()
def test_audio_content() -> types.AudioContent:
    """Tests audio content response."""
    return types.AudioContent(type="audio", data=WAV, mime_type="audio/wav")


@tool()
def test_embedded_resource() -> types.EmbeddedResource:
    """Tests embedded resource content response."""
    return types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        ),
    )


@tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        text("Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@tool()
def test_error_handling() -> str:
    """Tests error response handling (a tool result with isError: true)."""
    raise RuntimeError("This tool intentionally returns an error for testing")


# ------------------------------------------------- notifications during a call

LEVELS: list[types.LoggingLevel] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
log_level: types.LoggingLevel = "debug"  # set by logging/setLevel (below); one client at a time


async def log(ctx: Context, level: types.LoggingLevel, data: str) -> None:
    """Log to the client at or above the level it asked for. Before 2026-07-28
    the SDK sends every level and leaves logging/setLevel's threshold to the
    server; at 2026-07-28 it applies the request's _meta logLevel itself."""
    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS and LEVELS.index(level) < LEVELS.index(log_level):
        return
    await ctx.log(level, data)



@tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    # At 2026-07-28 the SDK sends them only when the request's _meta named a log level.
    await log(ctx, "info", "Tool execution started")
    await anyio.sleep(0.05)
    await log(ctx, "info", "Tool processing data")
    await anyio.sleep(0.05)
    await log(ctx, "info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications (against the request's progressToken)."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(0.05)
    meta = ctx.request_context.meta
    return str(meta.progress_token if meta and meta.progress_token is not None else 0)


@tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs one line, which must not reach a client that set no log level."""
    # At 2026-07-28 the SDK drops it unless _meta carried io.modelcontextprotocol/logLevel.
    await log(ctx, "info", "Diagnostic trace logging activated")
    return "Logging evaluated"


@tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Reports progress, then answers: the response stream holds no server request."""
    await ctx.report_progress(50, 100, "halfway")
    return "Streaming complete"


# SEP-1699: closes this call's SSE stream before answering; with the event
# store below the client reconnects (GET, Last-Event-ID) and gets the result
# replayed. Handshake era only: a 2026-07-28 response stream is not resumable.
@tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes the SSE stream mid-call; the result arrives after the client reconnects."""
    await ctx.close_sse_stream()
    await anyio.sleep(0.1)
    return "Reconnection test completed successfully: the client reconnected after the stream closed."


class MemoryEventStore(EventStore):
    """Every event of every stream, kept in memory for replay (SEP-1699).

    The SDK names a stream by its request id (or the GET stream's key), which
    is unique within a session but not across sessions, and the store is not
    told the session: enough for one client at a time, as the suite is.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []  # (event id, stream id, message or None)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{stream_id}:{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        ids = [event[0] for event in self.events]
        if last_event_id not in ids:
            return None
        stream_id = self.events[ids.index(last_event_id)][1]
        for event_id, stream, message in self.events[ids.index(last_event_id) + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


# ---------------------------------------- server-to-client requests (2025-11-25)


@tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=text(prompt))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    content = result.content
    reply = content.text if isinstance(content, types.TextContent) else "No response"
    return f"LLM response: {reply}"


async def elicit(ctx: Context, message: str, schema: dict[str, Any], label: str) -> str:
    # A raw requestedSchema, not ctx.elicit(model): the SEP-1034/1330 schemas
    # use defaults, titled enums and legacy enumNames exactly as written.
    result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"{label}: action={result.action}, content={json.dumps(result.content or {})}"


@tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)."""
    # The fields the suite's client answers with (tools-call-elicitation).
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await elicit(ctx, message, schema, "User response")


@tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values per SEP-1034."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    return await elicit(ctx, "Please review and update the form fields with defaults", schema, "Elicitation completed")


def titled(word: str) -> list[dict[str, str]]:
    return [{"const": f"value{i}", "title": f"{n} {word}"} for i, n in enumerate(["First", "Second", "Third"], 1)]


@tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema improvements per SEP-1330."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option", "enum": options},
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled("Option"),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled("Choice")},
            },
        },
        "required": [],
    }
    return await elicit(ctx, "Please select options from the enum fields", schema, "Elicitation completed")


# ------------------------------------------- capabilities per request (2026-07-28)


@tool()
def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; -32021 when the request did not declare it."""
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        data = types.MissingRequiredClientCapabilityErrorData(
            required_capabilities=types.ClientCapabilities(sampling=types.SamplingCapability())
        )
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="This tool requires the sampling capability",
            data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
    return "Success"


# SEP-2243: an argument the client mirrors into an `Mcp-Param-Region` header.
# At 2026-07-28 the SDK checks the header against the body before dispatch
# (400, -32020, on a missing, malformed or different value).
MIRRORED = {"x-mcp-header": "Region"}


@tool()
def test_custom_headers(
    region: Annotated[str, Field(description="Also sent as Mcp-Param-Region", json_schema_extra=MIRRORED)],
    query: str,
) -> str:
    """Takes an argument mirrored into an HTTP header (x-mcp-header)."""
    return f"region={region} query={query}"


# ----------------------------------- multi-round-trip requests (SEP-2322, 2026-07-28)
#
# A handler answers `input_required` with the questions it still needs, keyed
# by names of its own; the client asks them and retries the same request with
# `inputResponses` under those keys (and `requestState` echoed verbatim). The
# SDK seals requestState on the way out and verifies it on the way in, so a
# tampered or replayed state never reaches a handler (-32602). Before
# 2026-07-28 the SDK refuses an input_required result (-32603, "Handler returned
# an invalid result"), so these are tools of the 2026-07-28 era only.


def ask_form(message: str, field: str, kind: str = "string") -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message,
            requested_schema={"type": "object", "properties": {field: {"type": kind}}, "required": [field]},
        )
    )


def ask_llm(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=text(prompt))], max_tokens=max_tokens
        )
    )


ASK_ROOTS = types.ListRootsRequest()


def need(state: str | None = None, **requests: types.InputRequest) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests or None, request_state=state)


def answered(ctx: Context, *keys: str) -> dict[str, Any] | None:
    """The responses under `keys` when the retry carried all of them (extra keys
    are ignored), else None, which means: ask again."""
    responses = ctx.input_responses or {}
    if all(key in responses for key in keys):
        return {key: responses[key] for key in keys}
    return None


def form_value(response: Any, field: str) -> Any:
    if isinstance(response, types.ElicitResult) and response.action == "accept" and response.content:
        return response.content.get(field)
    return None


def sampled_text(response: Any) -> str:
    content = getattr(response, "content", None)
    return content.text if isinstance(content, types.TextContent) else "no response"


@tool()
def test_input_required_result_elicitation(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks the person's name (elicitation), then greets them."""
    got = answered(ctx, "user_name")
    if got is None:
        return need(user_name=ask_form("What is your name?", "name"))
    return f"Hello, {form_value(got['user_name'], 'name') or 'unknown'}!"


@tool()
def test_input_required_result_sampling(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks the client's LLM a question (sampling), then reports the answer."""
    got = answered(ctx, "capital_question")
    if got is None:
        return need(capital_question=ask_llm("What is the capital of France?", 100))
    return f"Sampling result: {sampled_text(got['capital_question'])}"


@tool()
def test_input_required_result_list_roots(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks for the client's roots, then counts them."""
    got = answered(ctx, "client_roots")
    if got is None:
        return need(client_roots=ASK_ROOTS)
    roots = getattr(got["client_roots"], "roots", [])
    return f"Found {len(roots)} root(s): " + ", ".join(str(root.uri) for root in roots)


@tool()
def test_input_required_result_request_state(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks for a confirmation and carries state across the round trip."""
    got = answered(ctx, "confirm")
    if got is None or ctx.request_state != "request-state":
        return need("request-state", confirm=ask_form("Please confirm", "ok", "boolean"))
    return f"state-ok: requestState validated (ok={form_value(got['confirm'], 'ok')})"


@tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks three questions at once (elicitation, sampling, roots)."""
    got = answered(ctx, "user_name", "greeting", "client_roots")
    if got is None or ctx.request_state != "multiple-inputs":
        return need(
            "multiple-inputs",
            user_name=ask_form("What is your name?", "name"),
            greeting=ask_llm("Generate a greeting", 50),
            client_roots=ASK_ROOTS,
        )
    name = form_value(got["user_name"], "name")
    roots = getattr(got["client_roots"], "roots", [])
    return f"Name: {name}; Greeting: {sampled_text(got['greeting'])}; Roots: {len(roots)}"


@tool()
def test_input_required_result_multi_round(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: two rounds of questions; the state carries round one's answer into round two."""
    state = json.loads(ctx.request_state) if ctx.request_state else {}
    if state.get("round") == 1 and (got := answered(ctx, "step1")):
        name = form_value(got["step1"], "name") or "friend"
        return need(
            json.dumps({"round": 2, "name": name}),
            step2=ask_form("Step 2: What is your favorite color?", "color"),
        )
    if state.get("round") == 2 and (got := answered(ctx, "step2")):
        return f"Multi-round complete for {state['name']} who likes {form_value(got['step2'], 'color')}"
    return need(json.dumps({"round": 1}), step1=ask_form("Step 1: What is your name?", "name"))


@tool()
def test_input_required_result_tampered_state(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: a round trip whose requestState must come back untampered."""
    # The SDK seals the state; a tampered echo is refused (-32602) before this runs.
    if ctx.request_state == "tamper-test" and answered(ctx, "confirm"):
        return "integrity-ok: state verified"
    return need("tamper-test", confirm=ask_form("Please confirm", "ok", "boolean"))


@tool()
def test_input_required_result_capabilities(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: asks only what the request's declared client capabilities allow."""
    if ctx.input_responses:
        return "capabilities-ok: received " + ",".join(sorted(ctx.input_responses))
    caps = ctx.client_capabilities or types.ClientCapabilities()
    requests: dict[str, types.InputRequest] = {}
    if caps.elicitation is not None:
        requests["elicit_input"] = ask_form("Elicitation input", "value")
    if caps.sampling is not None:
        requests["sample_input"] = ask_llm("Sample request", 50)
    if caps.roots is not None:
        requests["roots_input"] = ASK_ROOTS
    if not requests:
        return "No supported capabilities declared"
    return need("capabilities-test", **requests)


@server.prompt()
def test_input_required_result_prompt(ctx: Context) -> str | types.InputRequiredResult:
    """MRTR: a prompt that needs the person to supply its context first."""
    got = answered(ctx, "user_context")
    if got is None:
        return need(user_context=ask_form("What context should the prompt use?", "context"))
    return f"Prompt with context: {form_value(got['user_context'], 'context')}"


# ---------------------------------------- list changes (subscriptions/listen)


def dynamic_tool() -> str:
    """Present only between two calls of test_trigger_tool_change."""
    return "dynamic"


def dynamic_prompt() -> str:
    """Present only between two calls of test_trigger_prompt_change."""
    return "A prompt added at run time."


@tool()
async def test_trigger_tool_change(ctx: Context) -> str:
    """Adds or removes test_dynamic_tool and says the tool list changed."""
    # The change goes to subscriptions/listen streams (2026-07-28). Nothing is
    # sent to a 2025-era session: MCPServer's initialize result declares
    # listChanged: false (it has no setting for the handshake-era flags).
    if any(tool.name == "test_dynamic_tool" for tool in await server.list_tools()):
        server.remove_tool("test_dynamic_tool")
    else:
        server.add_tool(dynamic_tool, name="test_dynamic_tool")
    await ctx.notify_tools_changed()
    return "Mutation triggered"


@tool()
async def test_trigger_prompt_change(ctx: Context) -> str:
    """Adds or removes test_dynamic_prompt and says the prompt list changed."""
    if any(prompt.name == "test_dynamic_prompt" for prompt in await server.list_prompts()):
        server.remove_prompt("test_dynamic_prompt")
    else:
        server.prompt(name="test_dynamic_prompt")(dynamic_prompt)
    await ctx.notify_prompts_changed()
    return "Mutation triggered"


# ------------------------------------------------------------------- resources


@server.resource("test://static-text", name="static-text", title="Static Text Resource", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing."""
    return "This is the content of the static text resource."


@server.resource(
    "test://static-binary", name="static-binary", title="Static Binary Resource", mime_type="image/png"
)
def static_binary() -> bytes:
    """A static binary resource (image) for testing."""
    return base64.b64decode(PNG)


@server.resource(
    "test://template/{id}/data", name="template", title="Resource Template", mime_type="application/json"
)
def template(id: str) -> str:
    """A resource template with parameter substitution."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource(
    "test://watched-resource", name="watched-resource", title="Watched Resource", mime_type="text/plain"
)
def watched_resource() -> str:
    """A resource a client may subscribe to."""
    return "Watched resource content"


# -------------------------------------------------------------------- prompts


@server.prompt(title="Simple Test Prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt(title="Prompt With Arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(title="Prompt With Embedded Resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:  # noqa: N803 (the suite's name)
    """A prompt that includes an embedded resource."""
    resource = {"uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [
        {"role": "user", "content": {"type": "resource", "resource": resource}},
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


@server.prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[dict[str, Any]]:
    """A prompt that includes image content."""
    return [
        {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


# ----------------------------------------------------------------- completion


@server.completion()
async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
    """Suggests values for test_prompt_with_arguments' arguments; nothing elsewhere."""
    if isinstance(ref, types.PromptReference) and ref.name == "test_prompt_with_arguments":
        values = [v for v in ("paris", "park", "party") if v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)
    return types.Completion(values=[], total=0, has_more=False)


# -------------------------------------- methods the 2026-07-28 revision removed
#
# logging/setLevel and resources/subscribe|unsubscribe exist only in the
# handshake era. MCPServer has no decorator for them; the SDK's own advice
# (mcp.server.extension.MethodBinding) is the low-level Server's
# add_request_handler, which MCPServer keeps in a private attribute. The SDK
# refuses them at 2026-07-28 itself (404, -32601) whatever is registered.

subscriptions: set[str] = set()


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    global log_level
    log_level = params.level
    return types.EmptyResult()


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    subscriptions.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscriptions.discard(str(params.uri))
    return types.EmptyResult()


lowlevel = server._lowlevel_server  # noqa: SLF001 (see above)
lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


def main(argv: list[str]) -> None:
    transport = argv[1] if len(argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http" and len(argv) > 2:
        # Stateful: 2025-era clients get sessions; a request naming 2026-07-28
        # in MCP-Protocol-Version is served statelessly by the same app.
        # The event store and retry interval give 2025-era POST streams a
        # priming event and `retry:` so a client can resume them.
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(argv[2]),
            event_store=MemoryEventStore(),
            retry_interval=1000,
        )
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
