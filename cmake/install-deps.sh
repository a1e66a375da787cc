#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test the project (nvcc is expected
# on the machine already: the CUDA programs need it to compile, never a GPU).
set -euo pipefail
# clang: the libFuzzer harnesses (verify/fuzz); libeigen3-dev: the conversions' test oracle;
# pybind11 and Debian's python3 with numpy and pytest: the Python package and its tests.
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev doctest-dev clang libeigen3-dev
          pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pytest)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
command -v nvcc > /dev/null || export PATH=/usr/local/cuda/bin:$PATH
command -v nvcc > /dev/null || { echo "nvcc not found (CUDA Toolkit 13 expected in /usr/local/cuda)" >&2; exit 1; }
