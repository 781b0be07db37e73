#!/usr/bin/env bash
# Compile-only check of trainrun against another LibTorch's headers.
#
#   scripts/check-libtorch.sh INCLUDE_DIR [EXTRA_COMPILER_FLAG...]
#
# INCLUDE_DIR is the include/ folder of a LibTorch archive (libtorch/include) or of a pip wheel
# (site-packages/torch/include): the one holding torch/, ATen/, c10/ and torch/csrc/api/include.
# Every translation unit CMake builds under registry/, components/, runner/, examples/, tests/ and
# bench/ is compiled with -fsyntax-only, with the project's own flags taken from
# build/compile_commands.json (BUILD_DIR=... for another build folder; without one, CMake
# configures a scratch build to get them), Debian's torch include folders replaced by INCLUDE_DIR
# and INCLUDE_DIR/torch/csrc/api/include, no precompiled header, third_party/torch_compat dropped
# when INCLUDE_DIR has the header it stands in for, and gloo's headers from Debian's libgloo-dev
# (/usr/include/gloo; LibTorch ships none). Extra arguments go to the compiler, e.g.
# -DUSE_C10D_NCCL. Debian's own torch headers also sit in /usr/include, so a header missing from
# INCLUDE_DIR would silently come from there: a file that pulls in any of them counts as an error.
#
# Prints "ok FILE" or "error FILE: first error" per file, then a summary; exits 1 on any error.
# Full compiler output stays in $CHECK_LOG_DIR (default: a temporary folder, named on errors).
# Uses both cores (JOBS=N for another count); CHECK_ONLY=REGEX checks only the files it matches.
set -euo pipefail

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
include_dir=$(realpath "$1")
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-2}

[[ -d "$include_dir/torch" && -d "$include_dir/ATen" && -d "$include_dir/c10" ]] ||
  { echo "check-libtorch: $include_dir has no torch/, ATen/ and c10/ (give LibTorch's include folder)" >&2; exit 2; }
[[ -d "$include_dir/torch/csrc/api/include" ]] ||
  { echo "check-libtorch: $include_dir has no torch/csrc/api/include" >&2; exit 2; }
[[ -d /usr/include/gloo ]] || { echo "check-libtorch: gloo's headers are missing: apt-get install libgloo-dev" >&2; exit 2; }

work=${CHECK_LOG_DIR:-$(mktemp -d /tmp/check-libtorch.XXXXXX)}
mkdir -p "$work"

commands=$build_dir/compile_commands.json
if [[ ! -f "$commands" ]]; then
  echo "check-libtorch: no $commands; configuring a scratch build for the flags" >&2
  cmake -S "$root" -B "$work/build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTRAINRUN_PCH=OFF -DTRAINRUN_UNITY=OFF >"$work/cmake.log" 2>&1 ||
    { echo "check-libtorch: cmake failed, see $work/cmake.log" >&2; exit 2; }
  commands=$work/build/compile_commands.json
fi

# One response file per translation unit (units/N.rsp) and a list "N<TAB>FILE".
python3 - "$commands" "$root" "$include_dir" "$work" "$@" <<'EOF'
import json, os, re, shlex, sys

commands, root, inc, work, *extra = sys.argv[1:]
debian_api = "/usr/include/torch/csrc/api/include"
has_context = os.path.exists(os.path.join(inc, "torch/csrc/distributed/autograd/context/context.h"))
compat = os.path.join(root, "third_party/torch_compat")
# LibTorch 2.x trees ship fmt headers of their own; Debian's spdlog needs Debian's fmt, so a link
# to it goes first, as CMakeLists.txt does for a real build against such a tree.
system_fmt = []
if inc != "/usr/include" and os.path.exists(os.path.join(inc, "fmt/core.h")):
    os.makedirs(os.path.join(work, "system_fmt"), exist_ok=True)
    link = os.path.join(work, "system_fmt", "fmt")
    if not os.path.islink(link):
        os.symlink("/usr/include/fmt", link)
    system_fmt = ["-isystem" + os.path.join(work, "system_fmt")]
wanted = ("registry/", "components/", "runner/", "examples/", "tests/")
os.makedirs(os.path.join(work, "units"), exist_ok=True)
seen, units = set(), []
for entry in json.load(open(commands)):
    path = os.path.normpath(os.path.join(entry.get("directory", ""), entry["file"]))
    rel = os.path.relpath(path, root)
    if not (rel.startswith(wanted) or (rel.startswith("bench/") and rel.count("/") == 1)) or not rel.endswith(".cpp"):
        continue
    if rel in seen or not re.search(os.environ.get("CHECK_ONLY", ""), rel):
        continue
    seen.add(rel)
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    compiler, args, out = argv[0], argv[1:], list(system_fmt)
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-o", "-MF", "-MT", "-MQ") or (a == "-include" and nxt and "cmake_pch" in nxt):
            i += 2
            continue
        if a in ("-c", "-MD", "-MMD", "-Winvalid-pch") or a == entry["file"] or os.path.normpath(
                os.path.join(entry.get("directory", ""), a)) == path:
            i += 1
            continue
        if a in ("-I", "-isystem") and nxt is not None:
            a, nxt, i = a + nxt, None, i + 1  # join "-isystem DIR" as "-isystemDIR"
        for flag in ("-isystem", "-I"):
            if a.startswith(flag):
                d = os.path.normpath(a[len(flag):])
                if d == debian_api:
                    # /usr/include itself is a default system folder: naming it would break
                    # libstdc++'s #include_next, so only a foreign tree is added explicitly.
                    if inc != "/usr/include":
                        out.append("-isystem" + inc)
                    out.append("-isystem" + os.path.join(inc, "torch/csrc/api/include"))
                    a = None
                elif d == compat and has_context:
                    a = None
                break
        if a is not None:
            out.append(a)
        i += 1
    n = len(units)
    with open(os.path.join(work, "units", f"{n}.rsp"), "w") as f:
        f.write("\n".join(shlex.quote(x) for x in out + extra + ["-fsyntax-only", path]) + "\n")
    units.append((n, rel, compiler))
with open(os.path.join(work, "units", "list"), "w") as f:
    for n, rel, compiler in units:
        f.write(f"{n}\t{rel}\t{compiler}\n")
EOF

check_one() {  # N FILE COMPILER
  local n=$1 file=$2 cxx=${CXX:-$3} unit=$work/units/$1
  if "$cxx" "@$unit.rsp" -MD -MF "$unit.d" >"$unit.log" 2>&1; then
    local leak=""
    if [[ "$include_dir" != /usr/include ]]; then
      leak=$(tr ' \\' '\n\n' <"$unit.d" | grep -E '^/usr/include/(torch|ATen|c10|caffe2)/' | head -1 || true)
    fi
    if [[ -n "$leak" ]]; then
      echo "error $file: uses Debian's $leak (missing from the checked tree)"
      echo "$file" >>"$work/failed"
    else
      echo "ok $file"
    fi
  else
    echo "error $file: $(grep -m1 -E 'error|Error' "$unit.log" || tail -1 "$unit.log")"
    echo "$file" >>"$work/failed"
  fi
}
export -f check_one
export work include_dir

rm -f "$work/failed"
total=$(wc -l <"$work/units/list")
echo "check-libtorch: $total files against $include_dir ${*:+(extra: $*)}"
tr '\t' '\n' <"$work/units/list" | xargs -d '\n' -n3 -P"$jobs" bash -c 'check_one "$@"' _
failed=$( [[ -f "$work/failed" ]] && wc -l <"$work/failed" || echo 0)
echo "check-libtorch: $((total - failed)) ok, $failed with errors, of $total files"
if ((failed > 0)); then
  echo "check-libtorch: compiler output in $work/units/*.log"
  exit 1
fi
[[ -n "${CHECK_LOG_DIR:-}" ]] || rm -rf "$work"
