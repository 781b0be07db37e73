#!/usr/bin/env bash
# Compile-only check of trainrun against another LibTorch's headers.
#
#   scripts/check-libtorch.sh INCLUDE_DIR [EXTRA_COMPILER_FLAG...]
#   scripts/check-libtorch.sh --debian13-cuda [EXTRA_COMPILER_FLAG...]
#
# INCLUDE_DIR is the include/ folder of a LibTorch archive (libtorch/include) or of a pip wheel
# (site-packages/torch/include): the one holding torch/, ATen/, c10/ and torch/csrc/api/include.
# --debian13-cuda checks against Debian 13's CUDA LibTorch 2.6 (libtorch-cuda-dev, with the CUDA
# 12.4 toolkit headers, NCCL's and gloo's, all in one include folder): scripts/fetch-debian13-cuda.sh
# downloads and unpacks them into /tmp/libtorch-cuda-2.6 the first time (its header says what).
#
# Every translation unit CMake builds here (everything but fuzz/, whose targets are clang-only) is
# compiled with -fsyntax-only and the project's own flags, one compile command per source, taken
# from build/compile_commands.json (BUILD_DIR=... for another build folder). When that file is
# missing or lists unity batches in place of sources, a scratch non-unity build without PCH is
# configured in the work folder for the flags (the given build is not touched). Debian's torch
# include folders are replaced by INCLUDE_DIR and INCLUDE_DIR/torch/csrc/api/include, the
# precompiled header is dropped, third_party/torch_compat too when INCLUDE_DIR has the header it
# stands in for, and gloo's headers come from INCLUDE_DIR or else Debian's libgloo-dev.
# LibTorch's definitions for its consumers (USE_C10D_GLOO, USE_C10D_NCCL, ..., the C++11 ABI) are
# read from the checked LibTorch's own CMake config (Caffe2Targets.cmake, TorchConfig.cmake) where
# one sits next to INCLUDE_DIR (share/cmake, lib/*/cmake; TORCH_CMAKE_DIR=... names it), in place
# of those of the LibTorch the build was configured with; without one the build's are kept.
# Extra arguments go to the compiler (e.g. -I/usr/local/cuda/include for a CUDA archive).
# Debian's own torch headers also sit in /usr/include, so a header missing from INCLUDE_DIR would
# silently come from there: a file that takes from /usr/include anything INCLUDE_DIR also has
# (torch/, c10/, gloo/, cuda_runtime_api.h, ...; fmt and protobuf's google/ aside, taken from Debian on purpose) counts as an error.
#
# Prints "ok FILE" or "error FILE: first error" per file, then a summary with how many of the
# project's translation units were checked; exits 1 on any error, and when a source has no compile
# command (fewer checked than the project has). Full compiler output stays in $CHECK_LOG_DIR
# (default: a temporary folder, named on errors). Uses both cores (JOBS=N for another count);
# CHECK_ONLY=REGEX checks only the files it matches (a partial check is then no failure; an empty
# one is).
set -euo pipefail

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "$1" == --debian13-cuda ]]; then
  include_dir=$("$root/scripts/fetch-debian13-cuda.sh")
else
  include_dir=$(realpath "$1")
fi
shift
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-2}

[[ -d "$include_dir/torch" && -d "$include_dir/ATen" && -d "$include_dir/c10" ]] ||
  { echo "check-libtorch: $include_dir has no torch/, ATen/ and c10/ (give LibTorch's include folder)" >&2; exit 2; }
[[ -d "$include_dir/torch/csrc/api/include" ]] ||
  { echo "check-libtorch: $include_dir has no torch/csrc/api/include" >&2; exit 2; }
[[ -d "$include_dir/gloo" || -d /usr/include/gloo ]] ||
  { echo "check-libtorch: gloo's headers are missing: apt-get install libgloo-dev" >&2; exit 2; }

work=${CHECK_LOG_DIR:-$(mktemp -d /tmp/check-libtorch.XXXXXX)}
mkdir -p "$work"

commands=$build_dir/compile_commands.json
scratch=""
if [[ ! -f "$commands" ]]; then
  scratch="there is no $commands"
elif grep -q '/Unity/unity_' "$commands"; then
  scratch="$commands lists unity batches, not sources"
fi
if [[ -n "$scratch" ]]; then
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
  echo "check-libtorch: $scratch; configuring a scratch non-unity build for the flags" >&2
  cmake -S "$root" -B "$work/build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTRAINRUN_PCH=OFF -DTRAINRUN_UNITY=OFF \
    ${build_type:+-DCMAKE_BUILD_TYPE=$build_type} >"$work/cmake.log" 2>&1 ||
    { echo "check-libtorch: cmake failed, see $work/cmake.log" >&2; exit 2; }
  commands=$work/build/compile_commands.json
fi

# One response file per translation unit (units/N.rsp), a list "N<TAB>FILE<TAB>COMPILER", the
# project's count (units/total) and the /usr/include paths that would be leaks (units/leaks).
python3 - "$commands" "$root" "$include_dir" "$work" "$@" <<'PY'
import glob, json, os, re, shlex, subprocess, sys

commands, root, inc, work, *extra = sys.argv[1:]
build = os.path.dirname(os.path.abspath(commands))
debian_api = "/usr/include/torch/csrc/api/include"
has_context = os.path.exists(os.path.join(inc, "torch/csrc/distributed/autograd/context/context.h"))
compat = os.path.join(root, "third_party/torch_compat")


def say(line):
    print("check-libtorch: " + line, flush=True)


def consumer_definitions(cmake_dir):
    """The flags a LibTorch's CMake config gives every target that links it: the literal
    INTERFACE_COMPILE_DEFINITIONS of its targets and TORCH_CXX_FLAGS (the libstdc++ ABI)."""
    targets = open(os.path.join(cmake_dir, "Caffe2", "Caffe2Targets.cmake")).read()
    flags = []
    for m in re.finditer(r'INTERFACE_COMPILE_DEFINITIONS "([^"$\\]*)"', targets):
        flags += ["-D" + d for d in m.group(1).split(";") if d]
    config = open(os.path.join(cmake_dir, "Torch", "TorchConfig.cmake")).read()
    m = re.search(r'set\(TORCH_CXX_FLAGS "([^"]*)"\)', config)
    cxx = m.group(1).split() if m else []
    # "-D_GLIBCXX_USE_CXX11_ABI=" (no value) is what macOS builds write (libc++ has no such
    # setting: the 2.3.0 archive and the 2.7.1 wheel checked); with libstdc++ its `#if` fails.
    if "-D_GLIBCXX_USE_CXX11_ABI=" in cxx:
        say(f"{cmake_dir}: TORCH_CXX_FLAGS defines _GLIBCXX_USE_CXX11_ABI with no value (a macOS build's; "
            "libstdc++'s c++config.h fails on it); left out here")
        cxx.remove("-D_GLIBCXX_USE_CXX11_ABI=")
    return list(dict.fromkeys(flags + cxx))


def is_cmake_dir(d):
    return d and all(os.path.exists(os.path.join(d, f))
                     for f in ("Caffe2/Caffe2Targets.cmake", "Torch/TorchConfig.cmake"))


def cmake_dir_next_to(inc):
    if os.environ.get("TORCH_CMAKE_DIR"):
        return os.environ["TORCH_CMAKE_DIR"]
    up = os.path.dirname(inc)
    for d in [os.path.join(up, "share/cmake"), *glob.glob(os.path.join(up, "lib/*/cmake")), os.path.join(up, "lib/cmake")]:
        if is_cmake_dir(d):
            return d
    return None


def cmake_dir_of_build():
    cache = os.path.join(build, "CMakeCache.txt")
    m = re.search(r"^Torch_DIR:PATH=(.*)$", open(cache).read(), re.M) if os.path.exists(cache) else None
    if m and is_cmake_dir(os.path.dirname(m.group(1))):
        return os.path.dirname(m.group(1))
    debian = "/usr/lib/x86_64-linux-gnu/cmake"  # what the flags' Debian include paths imply
    return debian if is_cmake_dir(debian) else None


checked_cmake, build_cmake = cmake_dir_next_to(inc), cmake_dir_of_build()
drop, add = set(), []
if checked_cmake and build_cmake:
    drop, add = set(consumer_definitions(build_cmake)), consumer_definitions(checked_cmake)
    say(f"LibTorch's definitions from {checked_cmake}: {' '.join(add)} "
        f"(in place of {build_cmake}'s: {' '.join(sorted(drop))})")
else:
    say("LibTorch's definitions: the build's own (no CMake config of the checked LibTorch found; "
        "TORCH_CMAKE_DIR=... names one)")

# LibTorch 2.x trees ship fmt headers of their own (Debian's spdlog needs Debian's fmt), archives
# protobuf's too (onnx's headers and libprotobuf here are Debian's): a link to Debian's goes first,
# as CMakeLists.txt does for a real build against such a tree.
system_fmt = []
for name, probe in (("fmt", "fmt/core.h"), ("google", "google/protobuf/message.h")):
    if inc != "/usr/include" and os.path.exists(os.path.join(inc, probe)):
        os.makedirs(os.path.join(work, "system_fmt"), exist_ok=True)
        link = os.path.join(work, "system_fmt", name)
        if not os.path.islink(link):
            os.symlink("/usr/include/" + name, link)
        system_fmt = ["-isystem" + os.path.join(work, "system_fmt")]

# What INCLUDE_DIR has must not come from /usr/include (fmt is taken from there on purpose).
with open(os.path.join(work, "leaks"), "w") as f:
    if inc != "/usr/include":
        for name in sorted(os.listdir(inc)):
            if name not in ("fmt", "google") and os.path.exists(os.path.join("/usr/include", name)):
                tail = "/" if os.path.isdir(os.path.join(inc, name)) else "$"
                f.write("^/usr/include/" + re.escape(name) + tail + "\n")

try:  # the project's sources: git's, tracked or new; fuzz/ is built by clang only
    listed = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "--", "*.cpp"],
                            capture_output=True, text=True, check=True).stdout.split()
    project = {f for f in listed if not f.startswith("fuzz/")}
except (OSError, subprocess.CalledProcessError):
    project = set()

os.makedirs(os.path.join(work, "units"), exist_ok=True)
seen, units = set(), []
only = os.environ.get("CHECK_ONLY", "")
for entry in json.load(open(commands)):
    path = os.path.normpath(os.path.join(entry.get("directory", ""), entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or path.startswith(build + os.sep) or not rel.endswith(".cpp") or rel.startswith("fuzz/"):
        continue
    if rel in seen:
        continue
    seen.add(rel)
    if not re.search(only, rel):
        continue
    argv = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    compiler, args, out = argv[0], argv[1:], list(system_fmt)
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in ("-o", "-MF", "-MT", "-MQ") or (a == "-include" and nxt and "cmake_pch" in nxt):
            i += 2
            continue
        if a in ("-c", "-MD", "-MMD", "-Winvalid-pch") or a in drop or a == entry["file"] or os.path.normpath(
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
        f.write("\n".join(shlex.quote(x) for x in out + add + extra + ["-fsyntax-only", path]) + "\n")
    units.append((n, rel, compiler))
missing = sorted(project - seen)
for rel in missing[:10]:
    say(f"no compile command for {rel} in {commands}: not checked")
if len(missing) > 10:
    say(f"... and {len(missing) - 10} more without a compile command")
with open(os.path.join(work, "units", "list"), "w") as f:
    for n, rel, compiler in units:
        f.write(f"{n}\t{rel}\t{compiler}\n")
with open(os.path.join(work, "units", "total"), "w") as f:
    f.write(f"{len(project | seen)}\n")
PY

check_one() {  # N FILE COMPILER
  local n=$1 file=$2 cxx=${CXX:-$3} unit=$work/units/$1
  if "$cxx" "@$unit.rsp" -MD -MF "$unit.d" >"$unit.log" 2>&1; then
    local leak
    leak=$(tr ' \\' '\n\n' <"$unit.d" | grep -E -f "$work/leaks" | head -1 || true)
    if [[ -n "$leak" ]]; then
      echo "error $file: uses Debian's $leak (the checked tree has its own)"
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
export work

rm -f "$work/failed"
checked=$(wc -l <"$work/units/list")
total=$(cat "$work/units/total")
echo "check-libtorch: $checked files against $include_dir ${*:+(extra: $*)}"
tr '\t' '\n' <"$work/units/list" | xargs -r -d '\n' -n3 -P"$jobs" bash -c 'check_one "$@"' _
failed=$( [[ -f "$work/failed" ]] && wc -l <"$work/failed" || echo 0)
echo "check-libtorch: $((checked - failed)) ok, $failed with errors; checked $checked of the project's $total translation units"
status=0
if ((failed > 0)); then
  echo "check-libtorch: compiler output in $work/units/*.log"
  status=1
fi
if ((checked < total)); then
  if ((checked == 0)); then
    echo "check-libtorch: nothing checked"
    status=1
  elif [[ -n "${CHECK_ONLY:-}" ]]; then
    echo "check-libtorch: CHECK_ONLY=$CHECK_ONLY: a partial check"
  else
    echo "check-libtorch: $((total - checked)) translation units not checked: this is no full check"
    status=1
  fi
fi
((status == 0)) && [[ -z "${CHECK_LOG_DIR:-}" ]] && rm -rf "$work"
exit $status
