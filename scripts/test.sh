#!/usr/bin/env bash
# The test command: installs the pinned third-party peers, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Incremental caches only cost disk on a one-shot build.
export CARGO_INCREMENTAL=0
bash scripts/peers.sh
cargo test --workspace --locked
