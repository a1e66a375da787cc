#!/usr/bin/env bash
# The README's main job: installs what is missing, builds, and runs boundary-verify emulate on
# a generated batch for the stock post-feed-forward constants.
#   bash cmake/main-job.sh [ROWS] [OUTPUT]
set -euo pipefail
cd "$(dirname "$0")/.."
source cmake/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$(nproc)" --target boundary-verify
build/verify/boundary-verify emulate --constants fixtures/constants/muse-spark-post-ffn.json \
  --generate "${1:-1024}" --seed 1 --output "${2:-build/post-ffn-emulated.safetensors}"
