// The TypeScript SDK v2 server (@modelcontextprotocol/server 2.4.0): by
// default a strict MCP 2026-07-28 endpoint (`createMcpHandler(factory,
// { legacy: 'reject' })` refuses `initialize` and answers GET and DELETE with
// 405), or in the SDK's default mode. Served on node:http through the
// handler's web-standard `fetch` face.
//
// Every request's HTTP method and MCP headers (`Mcp-*`, `Mcp-Session-Id`),
// and the log level its body's `_meta` asks for, are logged to stderr as one
// JSON line, so a test can see what a client put on the wire.
//
// Usage: node ts_v2_server.mjs <port> [reject|stateless]
// (`stateless`: the SDK's default, which also serves 2025-era requests, each
// statelessly, beside 2026-07-28 ones).

import http from 'node:http';

import {
  McpServer,
  acceptedContent,
  createMcpHandler,
  inputRequired,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

const port = Number(process.argv[2] ?? 3210);
const legacy = process.argv[3] === 'stateless' ? 'stateless' : 'reject';
// Set by `announce`: the tool list has one more tool from then on.
let announced = false;
// Set by `add_quietly`: one more tool, and no notification says so.
let quiet = false;

function factory() {
  const server = new McpServer(
    { name: 'ts-v2', version: '2.4.0' },
    { capabilities: { resources: { subscribe: true, listChanged: true } } },
  );
  // A list change, told on every subscriptions/listen stream that asked for it.
  server.registerTool(
    'announce',
    { description: 'Add a tool shortly', inputSchema: z.object({}) },
    async () => {
      setTimeout(() => {
        announced = true;
        handler.notify.toolsChanged();
      }, 200);
      return { content: [{ type: 'text', text: 'announcing' }] };
    },
  );
  if (announced) {
    server.registerTool(
      'announced',
      { description: 'The tool announce added', inputSchema: z.object({}) },
      async () => ({ content: [{ type: 'text', text: 'here' }] }),
    );
  }
  // A change only a client that reads the list again (its ttlMs is 0) sees.
  server.registerTool(
    'add_quietly',
    { description: 'Add a tool and tell no one', inputSchema: z.object({}) },
    async () => {
      quiet = true;
      return { content: [{ type: 'text', text: 'added' }] };
    },
  );
  if (quiet) {
    server.registerTool(
      'quiet',
      { description: 'The tool add_quietly added', inputSchema: z.object({}) },
      async () => ({ content: [{ type: 'text', text: 'shh' }] }),
    );
  }
  // A resource whose updates go to the streams that subscribed to it.
  server.registerResource(
    'board',
    'note://board',
    { mimeType: 'text/plain', description: 'A board that changes' },
    async (uri) => ({ contents: [{ uri: uri.href, text: 'board' }] }),
  );
  server.registerTool(
    'touch',
    { description: 'Change the board shortly', inputSchema: z.object({}) },
    async () => {
      setTimeout(() => handler.notify.resourceUpdated('note://board'), 200);
      return { content: [{ type: 'text', text: 'touching' }] };
    },
  );
  server.registerTool(
    'echo',
    { description: 'Echo a message', inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] }),
  );
  server.registerTool(
    'add',
    { description: 'Add two integers', inputSchema: z.object({ a: z.number().int(), b: z.number().int() }) },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
  );
  // A parameter mirrored into a header: the SDK checks Mcp-Param-Region
  // against the body and refuses a request without it.
  server.registerTool(
    'in_region',
    {
      description: 'Say which region a request was routed to',
      inputSchema: z.object({
        region: z.string().meta({ 'x-mcp-header': 'Region' }),
        query: z.string(),
      }),
    },
    async ({ region, query }) => ({ content: [{ type: 'text', text: `${query} in ${region}` }] }),
  );
  // An annotation the transport page forbids (a number): a client must not offer it.
  server.registerTool(
    'bad_header',
    {
      description: 'A tool with an invalid x-mcp-header',
      inputSchema: z.object({ score: z.number().meta({ 'x-mcp-header': 'Score' }) }),
    },
    async () => ({ content: [{ type: 'text', text: 'should not be called' }] }),
  );
  // Answers after `ms` (for deadlines and cancellation).
  server.registerTool(
    'sleep',
    { description: 'Answer after a while', inputSchema: z.object({ ms: z.number().int() }) },
    async ({ ms }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { content: [{ type: 'text', text: `slept ${ms}` }] };
    },
  );
  // A multi-round-trip request: asks the person (elicitation) and goes on
  // with the answer in the retry.
  server.registerTool(
    'confirm_delete',
    { description: 'Ask before pretending to delete a file', inputSchema: z.object({ path: z.string() }) },
    async ({ path }, ctx) => {
      const schema = z.object({ confirm: z.boolean() });
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', schema);
      if (answer === undefined) {
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Delete ${path}?`, requestedSchema: schema }),
          },
          requestState: `delete:${path}`,
        });
      }
      return {
        content: [{ type: 'text', text: answer.confirm ? `deleted ${path}` : `kept ${path}` }],
      };
    },
  );
  return server;
}

const handler = createMcpHandler(factory, { legacy });

http
  .createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const seen = { http: req.method };
    for (const [name, value] of headers) {
      if (name.startsWith('mcp-') || name === 'mcp-session-id') seen[name] = value;
    }
    try {
      const level = JSON.parse(Buffer.concat(chunks).toString())?.params?._meta?.[
        'io.modelcontextprotocol/logLevel'
      ];
      if (level !== undefined) seen.logLevel = level;
    } catch {
      // Not JSON: the SDK answers it.
    }
    console.error(JSON.stringify(seen));
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? Buffer.concat(chunks) : undefined,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  })
  .listen(port, '127.0.0.1', () => console.error(`listening on ${port}`));
