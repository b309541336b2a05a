#!/usr/bin/env bash
# Installs the MCP gateways `harness gateway` compares `mcpvisor serve` with,
# pinned by package.json + package-lock.json: supergateway, mcp-proxy and
# mcp-hub (npm). Benchmarks only: the tests and CI never use them. Idempotent:
# a stamp of the pin files skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")"

stamp_of() { cat package.json package-lock.json | sha256sum | cut -d' ' -f1; }
want=$(stamp_of)
if [ -f .installed ] && [ "$(cat .installed)" = "$want" ] \
  && [ -f node_modules/supergateway/dist/index.js ] \
  && [ -f node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs ] \
  && [ -f node_modules/mcp-hub/dist/cli.js ]; then
  exit 0
fi

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "bench peers: $tool is required" >&2; exit 1; }
done

npm ci --no-audit --no-fund --loglevel=error
echo "$want" > .installed
echo "bench peers: installed supergateway, mcp-proxy and mcp-hub"
