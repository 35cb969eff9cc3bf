#!/usr/bin/env bash
# Clang's thread-safety analysis over the translation units whose state is annotated
# (core/thread_annotations.hpp; docs/guarantees/thread-safety.md). Usage:
#   scripts/thread-safety.sh [file.cpp ...]
# Configures a clang build tree in build-tsa/ (override with TSA_BUILD_DIR) only for its
# compile_commands.json (nothing is built), then runs `clang++ -fsyntax-only -Wthread-safety
# -Werror=thread-safety` on each file with that file's own flags, two at a time (TSA_JOBS).
# Exit 1 if any file has a finding; each is printed with its file:line.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${TSA_BUILD_DIR:-$root/build-tsa}
jobs=${TSA_JOBS:-2}
start=$SECONDS

command -v clang++ >/dev/null || "$root/scripts/setup-debian.sh" fuzz # clang

# File by file (no unity batches): an entry per source, and a finding names its own file.
# Configured every time (about a second once cached), so new sources are listed.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DWOPBRIDGE_BUILD_TESTS=OFF -DWOPBRIDGE_UNITY_BUILD=OFF -DWOPBRIDGE_HARDENING=OFF >/dev/null

if [[ $# -gt 0 ]]; then
  files=("$@")
else
  # The annotated classes' own files, and every other source that includes an annotated header
  # (their inline members are analysed where they are used).
  mapfile -t files < <(cd "$root" && {
    ls bridge/src/app/bridge*.cpp bridge/src/plugins/connector_host*.cpp \
       bridge/src/store/sqlite/*.cpp bridge/src/store/postgres/*.cpp bridge/src/delivery/*.cpp
    grep -rlE '#include "(core/thread_annotations|app/bridge_impl|plugins/connector_host_impl|store/sqlite/sqlite_(store_impl|connection)|store/postgres/postgres_store_impl|delivery/delivery_engine)\.hpp"' \
      bridge/src --include='*.cpp'
  } | sort -u)
fi

flags=(-fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror=thread-safety
       -Werror=thread-safety-beta)
python3 - "$build/compile_commands.json" "$root" "${files[@]}" >"$build/tsa-commands" <<'EOF'
import json, os, shlex, sys
db, root, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
entries = {os.path.realpath(e["file"]): e for e in json.load(open(db))}
for f in wanted:
    e = entries.get(os.path.realpath(os.path.join(root, f)))
    if e is None:
        sys.exit(f"thread-safety.sh: {f} is not in {db} (not a source of the build?)")
    args = shlex.split(e["command"])
    out, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-c"):
            skip = a == "-o"
        elif a.startswith(("-g", "-O")) or a.endswith("ccache"):
            pass  # nothing is generated: no debug info, no optimisation
        else:
            out.append(a)
    print(e["directory"] + "\t" + shlex.join(out))
EOF

export TSA_FLAGS="${flags[*]}"
failed=0
# One clang per file; its diagnostics are printed whole (never interleaved) when it finishes.
xargs -d '\n' -n 1 -P "$jobs" bash -c '
  dir=${1%%$'"'"'\t'"'"'*}; cmd=${1#*$'"'"'\t'"'"'}
  if ! log=$(cd "$dir" && eval "clang++ $TSA_FLAGS $cmd" 2>&1); then
    printf "%s\n" "$log" >&2; exit 1
  fi
  [[ -z $log ]] || printf "%s\n" "$log" >&2' _ <"$build/tsa-commands" || failed=1

count=$(wc -l <"$build/tsa-commands")
if [[ $failed -ne 0 ]]; then
  echo "thread-safety: FAILED ($count files, $((SECONDS - start)) s): see the findings above" >&2
  exit 1
fi
echo "thread-safety: ok ($count files, $((SECONDS - start)) s)"
