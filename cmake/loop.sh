#!/usr/bin/env bash
# The edit-build-test loop: builds only what the ctest tests matching REGEX run (the programs and
# modules their commands and environment name) and runs those tests.
#   bash cmake/loop.sh REGEX [BUILD_DIR]   e.g. cmake/loop.sh '^test_constants_json$' (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
regex=${1:?usage: cmake/loop.sh REGEX [BUILD_DIR]}
build=${2:-build}
# Read from the CTestTestfile.cmake files, which name a test's program even before it is built
# (ctest --show-only leaves such a command out). Wanted: every program or module ninja links that
# a matching test's add_test or properties name, or that lies in a folder they name
# (PYTHONPATH=<build>/python: the Python package's module).
mapfile -t targets < <(/usr/bin/python3 - "$build" "$regex" <<'EOF'
import glob, os, re, subprocess, sys
build, regex = os.path.realpath(sys.argv[1]), sys.argv[2]
linked = {path for path, rule in (line.split(": ", 1) for line in subprocess.run(
    ["ninja", "-C", build, "-t", "targets", "all"], capture_output=True, text=True, check=True).stdout.splitlines())
          if "_LINKER__" in rule}
named = set()
for testfile in glob.glob(os.path.join(build, "**", "CTestTestfile.cmake"), recursive=True):
    for line in open(testfile):
        m = re.match(r"(?:add_test|set_tests_properties)\(\[=\[(.*?)\]=\]", line)
        if m and re.search(regex, m.group(1)):
            named.update(re.findall(re.escape(build) + r"/[^\";: ]+", line))
wanted = {o for o in linked for path in named
          if o == os.path.relpath(path, build) or o.startswith(os.path.relpath(path, build) + "/")}
for target in sorted(wanted):
    print(target)
EOF
)
if [ ${#targets[@]} -eq 0 ]; then
  echo "no test matches '$regex', or its tests run nothing built here" >&2
  exit 1
fi
ninja -C "$build" "${targets[@]}"
ctest --test-dir "$build" -R "$regex" --output-on-failure
