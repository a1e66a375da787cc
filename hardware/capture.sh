#!/usr/bin/env bash
# Re-captures the MUFU.RSQ table on the GPU of this machine (docs/emulator.md, "The MUFU.RSQ model").
#   hardware/capture.sh OUT_DIR
# Builds mufu_rsq_capture with nvcc alone (no project dependencies), runs it, and leaves in
# OUT_DIR: mufu_rsq_delta.bin, provenance.json, capture.log, nvidia-smi.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${1:?usage: capture.sh OUT_DIR}
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
nvcc -std=c++20 -O2 -gencode arch=compute_90,code=sm_90 -fmad=false \
  -I"$root/reference/include" -I"$root/kernels/include" \
  "$here/mufu_rsq_capture.cu" -o "$out/mufu_rsq_capture"
"$out/mufu_rsq_capture" "$out" 2>&1 | tee "$out/capture.log"
rm -f "$out/mufu_rsq_capture"
nvcc -std=c++20 -O2 -gencode arch=compute_90,code=sm_90 -fmad=false \
  -I"$root/kernels/include" "$here/nan_probe.cu" -o "$out/nan_probe"
"$out/nan_probe" 2>&1 | tee "$out/nan_probe.log"
rm -f "$out/nan_probe"
