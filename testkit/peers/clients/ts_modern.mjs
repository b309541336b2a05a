// A client of `mcpvisor serve` at MCP 2026-07-28 on the TypeScript SDK v2
// (@modelcontextprotocol/client), pinned to that revision
// (`versionNegotiation: {mode: {pin: '2026-07-28'}}`: no fallback to
// `initialize`), used by serve/tests/it/modern_clients.rs. Runs on Node 22.
//
// Usage: node ts_modern.mjs stdio <command> [args...]
//        node ts_modern.mjs http <url>
//
// The scenario of ts_client.mjs at the stateless revision: discover (at
// connect), list the tools, echo, progress, cancel a long sleep, then crash the
// demo server with a `subscriptions/listen` stream open and wait for its tools
// to come back. Prints one JSON object on stdout; a failed step records its
// error text under "errors" and the scenario goes on.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const MODE = '2026-07-28';
const ECHO = 'mcp__demo__echo';
const STEP_TIMEOUT_MS = 15_000;
const RECOVERY_TIMEOUT_MS = 20_000;
const CANCEL_AFTER_MS = 1_000;
const SLEEP_MS = 30_000;

const out = { sdk: 'typescript-mcp-v2', mode: MODE, errors: [] };
const fail = (step, error) => out.errors.push({ step, error: describe(error) });

function describe(error) {
    if (error instanceof Error) {
        return `${error.name}: ${error.message}`;
    }
    return String(error);
}

const textOf = result => (result.content ?? []).map(block => block.text ?? '').join('');
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Runs `body()` within `timeoutMs`; records a failure instead of throwing. */
async function step(name, body, timeoutMs = STEP_TIMEOUT_MS) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
        await Promise.race([body(), timeout]);
        return true;
    } catch (error) {
        fail(name, error);
        return false;
    } finally {
        clearTimeout(timer);
    }
}

let listChanged = 0;
let listChangedWaiters = [];

async function toolNames(client) {
    const names = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
        // Bypassing the SDK's response cache: the test asks for the list as it is now.
        const result = await client.listTools(cursor ? { cursor } : undefined, { timeout: STEP_TIMEOUT_MS, cacheMode: 'bypass' });
        names.push(...result.tools.map(tool => tool.name));
        cursor = result.nextCursor;
        if (!cursor) {
            break;
        }
    }
    return names;
}

/** Re-lists on each list_changed past the `seen`th until the demo server's tools are there. */
async function toolsAfterListChanged(client, seen) {
    for (;;) {
        while (listChanged <= seen) {
            await new Promise(resolve => listChangedWaiters.push(resolve));
        }
        seen = listChanged;
        const names = await toolNames(client);
        if (names.includes(ECHO)) {
            return names;
        }
    }
}

const call = (client, name, args, options = {}) =>
    client.callTool({ name, arguments: args }, { timeout: STEP_TIMEOUT_MS, ...options });

async function scenario(client, transport) {
    client.setNotificationHandler('notifications/tools/list_changed', () => {
        listChanged += 1;
        const waiters = listChangedWaiters;
        listChangedWaiters = [];
        waiters.forEach(wake => wake());
    });

    const connected = await step('connect', async () => {
        await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
        out.protocol_version = client.getNegotiatedProtocolVersion?.() ?? null;
        out.server_name = client.getServerVersion()?.name ?? null;
    });
    if (!connected) {
        return;
    }

    await step('list_tools', async () => {
        // serve may answer before the demo server is up: poll until its tools are there.
        let names = await toolNames(client);
        while (!names.includes(ECHO)) {
            await sleep(100);
            names = await toolNames(client);
        }
        out.tools = names;
    }, RECOVERY_TIMEOUT_MS);

    await step('echo', async () => {
        const result = await call(client, ECHO, { text: 'hello from typescript at 2026' });
        out.echo = { text: textOf(result), is_error: Boolean(result.isError) };
    });

    await step('progress', async () => {
        const seen = [];
        const result = await call(client, 'mcp__demo__progress', { steps: 3, delay_ms: 20 }, {
            onprogress: progress => seen.push(progress.progress),
        });
        out.progress = {
            count: seen.length,
            values: seen,
            text: textOf(result),
            is_error: Boolean(result.isError),
        };
    });

    await step('cancel', async () => {
        const started = Date.now();
        // Aborting makes the SDK reject the call and send notifications/cancelled.
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort('cancelled by the test client'), CANCEL_AFTER_MS);
        let completed = null;
        let cancelled = false;
        try {
            const result = await call(client, 'mcp__demo__sleep', { ms: SLEEP_MS }, {
                signal: abort.signal,
                timeout: SLEEP_MS * 2,
            });
            completed = { text: textOf(result), is_error: Boolean(result.isError) };
        } catch (error) {
            if (!abort.signal.aborted) {
                throw error;
            }
            cancelled = true;
        } finally {
            clearTimeout(timer);
        }
        out.cancel = { cancelled, completed, elapsed_ms: Date.now() - started };
    });

    await step('echo_after_cancel', async () => {
        const result = await call(client, ECHO, { text: 'after cancel' });
        out.echo_after_cancel = { text: textOf(result), is_error: Boolean(result.isError) };
    });

    await step('upstream_cancellations', async () => {
        // The cancellation reaches the demo server asynchronously: poll for it.
        const deadline = Date.now() + 5_000;
        let seen = [];
        for (;;) {
            seen = JSON.parse(textOf(await call(client, 'mcp__demo__cancelled', {})));
            if (seen.some(c => c.tool === 'sleep') || Date.now() > deadline) {
                break;
            }
            await sleep(100);
        }
        out.upstream_cancellations = seen;
    });

    await step('pid_before', async () => {
        out.pid_before = Number.parseInt(textOf(await call(client, 'mcp__demo__pid', {})), 10);
    });

    const seenBeforeCrash = listChanged;
    let subscription;
    await step('listen', async () => {
        subscription = await client.listen({ toolsListChanged: true });
        out.listen_honored = subscription.honoredFilter.toolsListChanged === true;
    });

    await step('crash', async () => {
        const result = await call(client, 'mcp__demo__crash', {});
        out.crash = { text: textOf(result), is_error: Boolean(result.isError) };
    });

    await step('recover', async () => {
        out.tools_after_crash = await toolsAfterListChanged(client, seenBeforeCrash);
    }, RECOVERY_TIMEOUT_MS);
    out.list_changed_after_crash = listChanged - seenBeforeCrash;
    await step('unlisten', async () => subscription?.close());

    await step('pid_after', async () => {
        out.pid_after = Number.parseInt(textOf(await call(client, 'mcp__demo__pid', {})), 10);
    });
}

async function main(argv) {
    const [mode, ...rest] = argv;
    if (argv.length < 2 || (mode !== 'stdio' && mode !== 'http')) {
        process.stderr.write('usage: ts_modern.mjs stdio <command> [args...] | http <url>\n');
        process.exit(2);
    }
    let transport;
    if (mode === 'stdio') {
        transport = new StdioClientTransport({
            command: rest[0],
            args: rest.slice(1),
            env: { ...process.env },
            cwd: process.cwd(),
            stderr: 'inherit',
        });
    } else {
        // The gateway's bearer token, as a host's config would carry it.
        const authorization = process.env.MCP_AUTHORIZATION;
        const requestInit = authorization ? { headers: { Authorization: authorization } } : undefined;
        transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit });
    }
    transport.onerror = error => (out.transport_errors ??= []).push(describe(error));
    const client = new Client(
        { name: 'mcpvisor-gateway-ts-v2', version: '0.0.0' },
        { versionNegotiation: { mode: { pin: MODE } } },
    );
    try {
        await scenario(client, transport);
        await step('close', () => client.close());
        out.closed = true;
    } catch (error) {
        fail('session', error);
    }
    process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
}

// A global bound, so a hang anywhere still prints what was seen.
setTimeout(() => {
    fail('session', 'the scenario did not finish within 120 s');
    process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
}, 120_000).unref();

await main(process.argv.slice(2));
