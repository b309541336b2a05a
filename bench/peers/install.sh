#!/usr/bin/env bash
# Installs the MCP gateways `harness gateway` compares `mcpvisor serve` with:
# supergateway, mcp-proxy and mcp-hub (npm, pinned by package.json +
# package-lock.json), FastMCP's proxy (PyPI `fastmcp`, pinned with every
# dependency in fastmcp.txt) and IBM ContextForge (PyPI
# `mcp-contextforge-gateway`, contextforge.txt), each Python one in a venv of
# its own (they pin different `mcp` SDKs). Benchmarks only: the tests and CI
# never use them. Idempotent: a stamp of the pin files skips the work when
# nothing changed.
set -euo pipefail
cd "$(dirname "$0")"

pins=(package.json package-lock.json fastmcp.txt contextforge.txt)
stamp_of() { cat "${pins[@]}" | sha256sum | cut -d' ' -f1; }
want=$(stamp_of)
if [ -f .installed ] && [ "$(cat .installed)" = "$want" ] \
  && [ -f node_modules/supergateway/dist/index.js ] \
  && [ -f node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs ] \
  && [ -f node_modules/mcp-hub/dist/cli.js ] \
  && [ -x venv-fastmcp/bin/fastmcp ] \
  && [ -x venv-contextforge/bin/python ]; then
  exit 0
fi

for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "bench peers: $tool is required" >&2; exit 1; }
done

npm ci --no-audit --no-fund --loglevel=error
for peer in fastmcp contextforge; do
  rm -rf "venv-$peer"
  python3 -m venv "venv-$peer"
  "venv-$peer/bin/pip" install --quiet --disable-pip-version-check -r "$peer.txt"
done
venv-contextforge/bin/python -c 'import importlib.util as u; assert u.find_spec("mcpgateway.translate")' \
  || { echo "bench peers: ContextForge did not install" >&2; exit 1; }
echo "$want" > .installed
echo "bench peers: installed supergateway, mcp-proxy, mcp-hub, FastMCP and ContextForge"
