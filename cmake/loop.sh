#!/usr/bin/env bash
# The edit-build-test loop: builds only what the ctest tests matching REGEX run (the programs and
# files their commands and environment name, as ctest lists them) and runs those tests.
#   bash cmake/loop.sh REGEX [BUILD_DIR]   e.g. cmake/loop.sh '^test_constants_json$' (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
regex=${1:?usage: cmake/loop.sh REGEX [BUILD_DIR]}
build=${2:-build}
# ninja's outputs that a matching test names: an argument or environment value that is one, or a
# folder that holds some (PYTHONPATH=<build>/python: the Python package's module).
mapfile -t targets < <(ctest --test-dir "$build" -R "$regex" --show-only=json-v1 |
  /usr/bin/python3 -c '
import json, os, subprocess, sys
build = os.path.realpath(sys.argv[1])
outputs = {line.split(":")[0] for line in
           subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], capture_output=True, text=True,
                          check=True).stdout.splitlines()}
named = set()
for test in json.load(sys.stdin)["tests"]:
    named.update(test.get("command", []))
    for p in test.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            for entry in p["value"]:
                named.update(entry.split("=", 1)[1].split(":"))
wanted = set()
for path in named:
    if not path.startswith(build + "/"):
        continue
    rel = os.path.relpath(path, build)
    wanted.update(o for o in outputs if o == rel or o.startswith(rel + "/"))
print("\n".join(sorted(wanted)))
' "$build")
if [ ${#targets[@]} -eq 0 ]; then
  echo "no test matches '$regex', or its tests run nothing built here" >&2
  exit 1
fi
ninja -C "$build" "${targets[@]}"
ctest --test-dir "$build" -R "$regex" --output-on-failure
