#!/bin/bash
# gpu-check.sh — on a machine with an NVIDIA GPU and a pip torch (or a LibTorch archive): build trainrun
# and its GPU tests against that LibTorch and a portable-deps prefix, run `ctest -L gpu` and bench/compare's
# CUDA rows (pets: resnet50d fp16 channels_last; basicnet), print one table. For a time-limited run: one
# command, no questions, every part reports and the next runs anyway; exit 0 when no part failed.
#
#   usage, from the checkout:  scripts/gpu-check.sh [--system] [DEPS_DIR]   (default ./portable-deps)
#
# DEPS_DIR          a relocatable prefix of the other dependencies, from Debian 12's packages (PACKAGES.txt,
#                   lib/, include/, share/cmake/, pkgconfig.in/ naming @TRAINRUN_DEPS@, bin/pkg-config)
# --system          build against Debian's LibTorch and -dev packages instead (the default without DEPS_DIR
#                   where libtorch-dev is installed): a CPU machine's check of this script, GPU parts skip
# PYTHON            a python3 that imports torch (default python3): its torch is the LibTorch
#                   built against (torch.utils.cmake_prefix_path) and runs bench's PyTorch side
# TORCH_PREFIX      instead, a LibTorch archive: TORCH_PREFIX=/path/to/libtorch (TORCH_INCLUDE and
#                   TORCH_LIB default to its include/ and lib/)
# BUILD_DIR         build folder (default build-gpu)
# OUT_DIR           the logs and the table (default $OUT when set, else BUILD_DIR/gpu-check)
# JOBS              compile jobs (default nproc)
# TIME_LIMIT        seconds for the whole script (default 540); each part gets what is left after the
#                   later parts' reserve; a part with too little left is not run
# BENCH_ARGS        replace bench/compare's row arguments (default: --rows basicnet,pets --rounds 1)
# BUILD_LOCK        a file to hold with flock while compiling (shared build machines)
# EXTRA_CMAKE_ARGS  added to the configure command (split at spaces)
# CTEST_JOBS        tests run at once (default 4; they share the GPU)
# CONFIGURE_ONLY=1  stop after configuring; TORCH_CUDA_ARCH_LIST e.g. 9.0 (default: the first GPU's)
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
SYSTEM=0
DEPS_ARG=""
for a in "$@"; do
  case $a in
    -h|--help) usage ;;
    --system) SYSTEM=1 ;;
    -*) echo "gpu-check.sh: unknown option $a" >&2; usage ;;
    *) [ -z "$DEPS_ARG" ] || usage; DEPS_ARG=$a ;;
  esac
done

SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC" || exit 1
LIMIT=${TIME_LIMIT:-540}
B=${BUILD_DIR:-build-gpu}
case $B in /*) ;; *) B=$SRC/$B ;; esac
O=${OUT_DIR:-${OUT:-$B/gpu-check}}
case $O in /*) ;; *) O=$SRC/$O ;; esac
mkdir -p "$B" "$O" || exit 1
: > "$O/progress.log"

log() { printf '[%s +%3ds] %s\n' "$(date +%H:%M:%S)" "$SECONDS" "$*" | tee -a "$O/progress.log"; }
left() { echo $((LIMIT - SECONDS)); }
# part NAME STATUS NOTE: ok | FAILED | skipped | not run; the summary lists them in this order
declare -A STATUS NOTE
PARTS=()
part() {
  PARTS+=("$1"); STATUS[$1]=$2; NOTE[$1]=$3
  log "$1: $2${3:+ ($3)}"
}
# timed SECONDS LOG CMD...: CMD under a time limit (its whole process group), output to LOG
timed() {
  local limit=$1 logf=$2; shift 2
  timeout --kill-after=10 "$limit" "$@" > "$logf" 2>&1
}
log "gpu-check: checkout $SRC ($(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?')), build $B, logs $O, time limit ${LIMIT}s"

# ---- 1. which LibTorch, which dependencies ------------------------------------------------------
DEPS=""
DEPS_DIR=${DEPS_ARG:-portable-deps}
if [ "$SYSTEM" = 0 ] && [ -f "$DEPS_DIR/PACKAGES.txt" ] && [ -d "$DEPS_DIR/lib/cmake" ]; then
  DEPS=$(cd "$DEPS_DIR" && pwd)
elif [ "$SYSTEM" = 0 ]; then
  if [ -f /usr/lib/x86_64-linux-gnu/cmake/Torch/TorchConfig.cmake ] && [ -z "$DEPS_ARG" ] && [ -z "${TORCH_PREFIX:-}" ]; then
    SYSTEM=1
    log "no prefix at $DEPS_DIR, Debian's libtorch-dev is installed: building against the system (--system)"
  else
    part configure FAILED "$DEPS_DIR is not a portable-deps prefix (no PACKAGES.txt and lib/cmake/ there, see bench/README.md), and no --system"
  fi
fi

PY=${PYTHON:-python3}
# torch as the Python side sees it: one line of key=value pairs
torch_info() {
  timeout 120 "$1" - <<'EOF' 2>/dev/null
import os, torch, torch.utils
c = torch.cuda
ok = c.is_available()
print(f"version={torch.__version__}")
print(f"cuda={torch.version.cuda}")
print(f"available={ok}")
print(f"device={c.get_device_name(0) if ok else ''}")
print(f"cudnn={torch.backends.cudnn.version() if ok else ''}")
print(f"prefix={torch.utils.cmake_prefix_path}")
print(f"dir={os.path.dirname(torch.__file__)}")
print(f"abi={torch._C._GLIBCXX_USE_CXX11_ABI}")
EOF
}
declare -A T
read_info() { T=(); local k v; while IFS='=' read -r k v; do T[$k]=$v; done < <(torch_info "$1"); }
read_info "$PY"
if [ -z "${T[version]:-}" ] && [ "$SYSTEM" = 1 ] && [ "$PY" != /usr/bin/python3 ] && [ -z "${PYTHON:-}" ]; then
  PY=/usr/bin/python3   # Debian's python3-torch: the same LibTorch as --system builds against
  read_info "$PY"
fi
if [ -n "${T[version]:-}" ]; then
  log "python: $PY, torch ${T[version]}, built for CUDA ${T[cuda]}, GPU available ${T[available]}${T[device]:+ (${T[device]})}"
else
  log "python: $PY cannot import torch: no PyTorch side for the bench"
fi

if [ "$SYSTEM" = 1 ]; then
  TORCH_PREFIX=""
  TORCH_LIB=/usr/lib/x86_64-linux-gnu
  LIBTORCH="Debian's libtorch-dev $(dpkg-query -W -f '${Version}' libtorch-dev 2>/dev/null)"
elif [ -n "${TORCH_PREFIX:-}" ]; then
  TORCH_LIB=${TORCH_LIB:-$TORCH_PREFIX/lib}
  TORCH_INCLUDE=${TORCH_INCLUDE:-$TORCH_PREFIX/include}
  LIBTORCH="LibTorch archive $TORCH_PREFIX $(cat "$TORCH_PREFIX/build-version" 2>/dev/null)"
elif [ -n "${T[prefix]:-}" ]; then
  TORCH_PREFIX=${T[prefix]}
  TORCH_LIB=${TORCH_LIB:-${T[dir]}/lib}
  TORCH_INCLUDE=${TORCH_INCLUDE:-${T[dir]}/include}
  LIBTORCH="pip torch ${T[version]} ($TORCH_PREFIX)"
else
  TORCH_PREFIX=""
  [ -n "${STATUS[configure]:-}" ] || part configure FAILED "no LibTorch: set PYTHON to a python3 with torch, or TORCH_PREFIX=/path/to/libtorch"
fi
if [ -n "${TORCH_PREFIX:-}" ] && [ -z "${STATUS[configure]:-}" ]; then
  TORCH_CONFIG=$(find "$TORCH_PREFIX" -maxdepth 4 -name TorchConfig.cmake 2>/dev/null | head -1)
  if [ -z "$TORCH_CONFIG" ]; then
    part configure FAILED "no TorchConfig.cmake under $TORCH_PREFIX"
  elif grep -q '_GLIBCXX_USE_CXX11_ABI=0' "$TORCH_CONFIG"; then
    # the prefix's yaml-cpp, spdlog, OpenCV, ... take std::string with the C++11 ABI
    part configure FAILED "this LibTorch uses the pre-C++11 ABI ($TORCH_CONFIG); the prefix needs a cxx11-abi one"
  fi
fi
[ -n "${LIBTORCH:-}" ] && log "LibTorch: $LIBTORCH"

# ---- 2. the machine ------------------------------------------------------------------------------
GPU="none" DRIVER="-"
if command -v nvidia-smi >/dev/null; then
  q=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
  if [ -n "$q" ]; then
    IFS=, read -r GPU DRIVER CAP <<< "$q"
    GPU=$(echo "$GPU" | xargs) DRIVER=$(echo "$DRIVER" | xargs) CAP=$(echo "${CAP:-}" | tr -d ' ')
    if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ] && [[ $CAP =~ ^[0-9]+\.[0-9]+$ ]]; then export TORCH_CUDA_ARCH_LIST=$CAP; fi
  fi
fi
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH   # LibTorch's CMake config looks for the CUDA toolkit
fi
{
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), $(nproc) cores, $(ldd --version 2>&1 | head -1)"
  echo "g++: $(g++ --version 2>&1 | head -1)"
  echo "cmake: $(cmake --version 2>&1 | head -1), ninja $(ninja --version 2>&1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "gpu: $GPU, driver $DRIVER, compute capability ${CAP:-?}, TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-}"
  echo "python: $PY"; for k in "${!T[@]}"; do echo "  torch $k: ${T[$k]}"; done
  echo "LibTorch: ${LIBTORCH:-none}"
  echo "deps: ${DEPS:-system}"
} > "$O/env.txt" 2>&1
log "machine: $GPU, driver $DRIVER, $(nproc) cores"

# ---- 3. configure --------------------------------------------------------------------------------
if command -v ninja >/dev/null; then GEN=Ninja; else GEN="Unix Makefiles"; fi
ARGS=(-DCMAKE_BUILD_TYPE=Release -DTRAINRUN_UNITY=ON -DTRAINRUN_PCH=ON)
RUN_PATH=""
if [ -n "$DEPS" ] && [ -z "${STATUS[configure]:-}" ]; then
  L=$DEPS/lib
  RUN_PATH=$L:$TORCH_LIB   # for trainrun and the tests only: python and cmake keep the system's libraries
  # The prefix's .pc files name their folder @TRAINRUN_DEPS@; no system .pc file is read.
  mkdir -p "$B/pkgconfig"
  for pc in "$DEPS"/pkgconfig.in/*.pc; do sed "s|@TRAINRUN_DEPS@|$DEPS|g" "$pc" > "$B/pkgconfig/${pc##*/}"; done
  export PKG_CONFIG_PATH=$B/pkgconfig PKG_CONFIG_LIBDIR=$B/pkgconfig
  PKG_CONFIG=$DEPS/bin/pkg-config
  "$PKG_CONFIG" --version >/dev/null 2>&1 || PKG_CONFIG=$(command -v pkg-config || echo pkg-config)
  # A pip torch ships fmt/ and google/protobuf/ headers of its own: the prefix's, which its
  # libraries were built with, must win, so those folders are linked into one given with -I.
  rm -rf "$B/deps-first" && mkdir -p "$B/deps-first"
  FLAGS="-I$B/deps-first"
  for entry in "$DEPS"/include/*; do
    [ -e "$TORCH_INCLUDE/${entry##*/}" ] && ln -s "$entry" "$B/deps-first/"
  done
  # c10d's ProcessGroupGloo.hpp includes gloo's headers, which only some LibTorch builds carry.
  [ -e "$TORCH_INCLUDE/gloo/algorithm.h" ] || FLAGS="$FLAGS -isystem $DEPS/opt/gloo/include"
  ARGS+=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS" -DCMAKE_CXX_FLAGS="$FLAGS" -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"
    -Dyaml-cpp_DIR="$L/cmake/yaml-cpp" -Dfmt_DIR="$L/cmake/fmt" -Dspdlog_DIR="$L/cmake/spdlog"
    -DONNX_DIR="$L/cmake/ONNX" -DOpenCV_DIR="$L/cmake/opencv4"
    -Dnlohmann_json_DIR="$DEPS/share/cmake/nlohmann_json" -DCLI11_DIR="$DEPS/share/cmake/CLI11"
    -DZLIB_ROOT="$DEPS" -DZLIB_INCLUDE_DIR="$DEPS/include" -DZLIB_LIBRARY="$L/libz.so"
    -DJPEG_INCLUDE_DIR="$DEPS/include" -DJPEG_LIBRARY="$L/libjpeg.so"
    -DCURL_NO_CURL_CMAKE=ON -DCURL_INCLUDE_DIR="$DEPS/include" -DCURL_LIBRARY="$L/libcurl.so"
    -DLibArchive_INCLUDE_DIR="$DEPS/include" -DLibArchive_LIBRARY="$L/libarchive.so"
    -DOPENSSL_ROOT_DIR="$DEPS" -DOPENSSL_INCLUDE_DIR="$DEPS/include"
    -DOPENSSL_CRYPTO_LIBRARY="$L/libcrypto.so" -DOPENSSL_SSL_LIBRARY="$L/libssl.so"
    -DProtobuf_INCLUDE_DIR="$DEPS/include" -DProtobuf_LIBRARY="$L/libprotobuf.so"
    -DTCMALLOC_LIBRARY="$L/libtcmalloc_minimal.so.4" -DGTEST_ROOT="$DEPS"
    # the test lists are read when ctest runs, with RUN_PATH, not by the build, without it
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST)
  GTEST_CONFIG=$(find "$L" -maxdepth 4 -name GTestConfig.cmake 2>/dev/null | head -1)
  [ -n "$GTEST_CONFIG" ] && ARGS+=(-DGTest_DIR="${GTEST_CONFIG%/*}")
  if [ -n "${TORCH_CUDA_ARCH_LIST:-}" ]; then
    ARGS+=(-DCMAKE_CUDA_ARCHITECTURES="$(echo "$TORCH_CUDA_ARCH_LIST" | tr ' ,' ';;' | sed 's/+PTX//g; s/\.//g')")
  fi
elif [ -n "${TORCH_PREFIX:-}" ]; then
  ARGS+=(-DCMAKE_PREFIX_PATH="$TORCH_PREFIX")   # a LibTorch archive with the system's -dev packages
  RUN_PATH=$TORCH_LIB
fi
# A build folder configured from other sources or with another generator starts afresh.
if [ -f "$B/CMakeCache.txt" ] && { ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC" "$B/CMakeCache.txt" ||
                                   ! grep -qxF "CMAKE_GENERATOR:INTERNAL=$GEN" "$B/CMakeCache.txt"; }; then
  rm -rf "$B/CMakeCache.txt" "$B/CMakeFiles"
fi
read -ra EXTRA <<< "${EXTRA_CMAKE_ARGS:-}"
ARGS+=("${EXTRA[@]}")
TESTS=ON
if [ -z "${STATUS[configure]:-}" ]; then
  log "configuring ($GEN, tests on; log configure.log)"
  timed $(( $(left) < 180 ? $(left) : 180 )) "$O/configure.log" cmake -S "$SRC" -B "$B" -G "$GEN" "${ARGS[@]}" -DTRAINRUN_BUILD_TESTS=ON
  rc=$?
  if [ $rc != 0 ] && grep -q 'GTest' "$O/configure.log"; then
    # no GoogleTest here: trainrun alone, so that the bench still runs
    TESTS=OFF
    log "configure: GoogleTest not found; configuring again without the tests"
    mv "$O/configure.log" "$O/configure-with-tests.log"
    timed 180 "$O/configure.log" cmake -S "$SRC" -B "$B" -G "$GEN" "${ARGS[@]}" -DTRAINRUN_BUILD_TESTS=OFF
    rc=$?
  fi
  if [ $rc = 0 ]; then
    part configure ok "$( [ $TESTS = ON ] || echo 'without the tests: GoogleTest not found')"
  else
    part configure FAILED "exit $rc; see configure.log"
    grep -A4 'CMake Error' "$O/configure.log" | head -30
  fi
fi

# ---- 4. build: trainrun, the GPU tests and what they depend on ----------------------------------
BUILD_S="-"
GPU_TARGET=trainrun_gpu_tests
TRAINRUN_OK=0 TESTS_BUILT=0
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
  part build skipped "CONFIGURE_ONLY=1"
elif [ "${STATUS[configure]}" = ok ] && [ $(( $(left) - 200 )) -lt 60 ]; then
  part build FAILED "time limit: $(left)s left"
elif [ "${STATUS[configure]}" = ok ]; then
  TARGETS=(trainrun)
  if [ $TESTS = ON ] && grep -qsE "^(build )?$GPU_TARGET: " "$B/build.ninja" "$B/Makefile"; then
    TARGETS+=("$GPU_TARGET")
  fi
  budget=$(( $(left) - 200 ))   # kept for the tests and the bench
  log "building ${TARGETS[*]} with -j${JOBS:-$(nproc)} (up to ${budget}s; log build.log)"
  LOCK=()
  [ -n "${BUILD_LOCK:-}" ] && LOCK=(flock "$BUILD_LOCK")
  # keep going past a failed target: the tests not compiling must not cost the bench its trainrun
  if [ "$GEN" = Ninja ]; then KEEP=(-k 0); else KEEP=(-k); fi
  t0=$SECONDS
  timed "$budget" "$O/build.log" "${LOCK[@]}" cmake --build "$B" -j"${JOBS:-$(nproc)}" --target "${TARGETS[@]}" -- "${KEEP[@]}"
  rc=$?
  BUILD_S=$((SECONDS - t0))
  if [ $rc = 0 ]; then
    TRAINRUN_OK=1 TESTS_BUILT=1
    part build ok "${TARGETS[*]} in ${BUILD_S}s"
  else
    # did trainrun itself build? (asked again: nothing to do when it did)
    [ $rc != 124 ] && timed 60 "$O/build-trainrun.log" cmake --build "$B" --target trainrun && TRAINRUN_OK=1
    part build FAILED "exit $rc after ${BUILD_S}s$( [ $rc = 124 ] && echo ': time limit')$( [ $TRAINRUN_OK = 1 ] && echo ', trainrun built'); see build.log"
    grep -n -m 20 -i 'error' "$O/build.log"
  fi
else
  part build "not run" "not configured"
fi
TRAINRUN=$B/trainrun
if [ $TRAINRUN_OK = 1 ]; then
  LD_LIBRARY_PATH=$RUN_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$TRAINRUN" > "$O/ldd.txt" 2>&1
  grep 'not found' "$O/ldd.txt" && log "WARNING: libraries not found by ldd (ldd.txt)"
  LD_LIBRARY_PATH=$RUN_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 60 "$TRAINRUN" --version 2>&1 | tee -a "$O/progress.log"
fi

# ---- 5. ctest -L gpu ----------------------------------------------------------------------------
# The tests need RUN_PATH on LD_LIBRARY_PATH; ctest itself must not load the prefix's zlib, curl,
# OpenSSL, ...: an ELF ctest is started through the dynamic loader with the library path it had.
CTEST=(ctest)
if [ -n "$RUN_PATH" ]; then
  exe=$(readlink -f "$(command -v ctest)")
  if [ "$(head -c 4 "$exe" | tail -c 3)" != ELF ] && [ "$(head -c 2 "$exe")" = '#!' ]; then
    # pip's cmake: a Python script starting the package's own binary
    real=$($(head -1 "$exe" | cut -c3-) -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "ctest"))' 2>/dev/null)
    [ -x "$real" ] && exe=$real
  fi
  if [ -x /lib64/ld-linux-x86-64.so.2 ] && [ "$(head -c 4 "$exe" | tail -c 3)" = ELF ]; then
    CTEST=(/lib64/ld-linux-x86-64.so.2 --library-path "${LD_LIBRARY_PATH:-}" "$exe")
  fi
fi
TESTS_SUMMARY="-" SKIPS=""
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
  part "gpu tests" "not run" "CONFIGURE_ONLY=1"
elif [ $TESTS = OFF ] && [ "${STATUS[configure]}" = ok ]; then
  part "gpu tests" FAILED "not built: GoogleTest not found (configure-with-tests.log)"
elif [ $TESTS_BUILT != 1 ]; then
  part "gpu tests" "not run" "not built"
elif [ ! -x "$B/tests/$GPU_TARGET" ] && [ ! -x "$B/$GPU_TARGET" ]; then
  part "gpu tests" FAILED "this checkout has no $GPU_TARGET target"
elif [ $(( $(left) - 140 )) -lt 30 ]; then
  part "gpu tests" FAILED "time limit: $(left)s left"
else
  budget=$(( $(left) - 140 ))
  log "ctest -L gpu (up to ${budget}s; log ctest.log)"
  JUNIT=()   # every test's output, skipped ones included (CMake 3.21+): where the skip reasons are
  rm -f "$B/ctest-gpu.xml"
  [[ $(ctest --help 2>/dev/null) == *--output-junit* ]] && JUNIT=(--output-junit "$B/ctest-gpu.xml")
  # The tests' Python references (TRAINRUN_PYTHON) run with the library path as it was, not RUN_PATH.
  TEST_PY=$(command -v "$PY" || echo "$PY")
  if [ -n "$RUN_PATH" ]; then
    TEST_PY=$B/python-without-deps
    { echo '#!/bin/sh'
      echo "# written by scripts/gpu-check.sh: $PY without the portable-deps prefix on LD_LIBRARY_PATH"
      if [ -n "${LD_LIBRARY_PATH:-}" ]; then echo "LD_LIBRARY_PATH='$LD_LIBRARY_PATH'; export LD_LIBRARY_PATH"
      else echo "unset LD_LIBRARY_PATH"; fi
      echo "exec '$(command -v "$PY" || echo "$PY")' \"\$@\""; } > "$TEST_PY"
    chmod +x "$TEST_PY"
  fi
  (cd "$B" && export TRAINRUN_PYTHON=$TEST_PY && LD_LIBRARY_PATH=$RUN_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
     timed "$budget" "$O/ctest.log" "${CTEST[@]}" -L gpu -j"${CTEST_JOBS:-4}" --output-on-failure --no-tests=error "${JUNIT[@]}")
  rc=$?
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed ' "$O/ctest.log")
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped|Not Run' "$O/ctest.log")
  failed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|SEGFAULT|Child aborted)' "$O/ctest.log")
  TESTS_SUMMARY="$passed passed, $failed failed, $skipped skipped"
  # the skip reasons (GTEST_SKIP's message, the line after "file:line: Skipped"), with their counts
  grep -A1 ': Skipped$' "$B/ctest-gpu.xml" 2>/dev/null | grep -vE ': Skipped$|^--$' | sort | uniq -c | sort -rn > "$O/skip-reasons.txt"
  SKIPS=$(head -3 "$O/skip-reasons.txt" | sed -E 's/^ *([0-9]+) (.*)/\2 (\1)/' | paste -sd ';' | sed 's/;/; /g; s/|/\//g')
  if [ $rc = 0 ]; then
    part "gpu tests" ok "$TESTS_SUMMARY"
  else
    part "gpu tests" FAILED "$TESTS_SUMMARY; ctest exit $rc$( [ $rc = 124 ] && echo ': time limit'); see ctest.log"
    grep -E '\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception|SEGFAULT' "$O/ctest.log" | head -20
  fi
fi

# ---- 6. bench/compare --device cuda: the pets and basicnet rows --------------------------------
BENCH_LINES=()
if [ "${T[available]:-False}" != True ]; then
  part bench "not run" "no CUDA for $PY$( [ -n "${T[version]:-}" ] && echo " (torch ${T[version]}, built for CUDA ${T[cuda]})")"
elif [ $TRAINRUN_OK != 1 ]; then
  part bench "not run" "trainrun not built"
elif [ "$(left)" -lt 70 ]; then
  part bench FAILED "time limit: $(left)s left"
else
  budget=$(( $(left) - 15 ))
  read -ra ROWARGS <<< "${BENCH_ARGS:---rows basicnet,pets --rounds 1}"
  log "bench/compare --device cuda ${ROWARGS[*]} (up to ${budget}s; log bench.log)"
  WORK=$B/bench-work
  timed "$budget" "$O/bench.log" "$PY" "$SRC/bench/compare" --device cuda "${ROWARGS[@]}" --settings equal \
    --trainrun "$TRAINRUN" --trainrun-ld-path "$RUN_PATH" --python "$PY" --workdir "$WORK" \
    --timeout $(( budget / 3 )) --json "$O/bench.json"
  rc=$?
  mkdir -p "$O/bench-logs" && cp "$WORK"/logs/*.log "$O/bench-logs/" 2>/dev/null
  for f in "$O"/bench-logs/*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; done
  # the table's rows: | row | settings | side | precision, loader | steps | wall | train | img/s | synthetic img/s |
  # input ratio | first step | RSS | ...
  while IFS='|' read -r _ row _ side what steps wall train imgs synth ratio first _; do
    row=$(echo $row) side=$(echo $side)
    case $side in
      trainrun|PyTorch) BENCH_LINES+=("$row, $side|$(echo $imgs) img/s, input ratio $(echo $ratio) (synthetic $(echo $synth) img/s) ($(echo $what); $(echo $steps) steps, train $(echo $train) s, wall $(echo $wall) s, first step $(echo $first) s)") ;;
      "trainrun / PyTorch") BENCH_LINES+=("$row, trainrun / PyTorch|img/s $(echo $imgs), wall $(echo $wall), input ratio $(echo $ratio)") ;;
    esac
  done < <(grep -E '^\| [a-z0-9_]+-cuda \|' "$O/bench.log")
  if [ $rc = 0 ] && [ ${#BENCH_LINES[@]} -gt 0 ]; then
    part bench ok "${#BENCH_LINES[@]} table lines"
  else
    part bench FAILED "exit $rc$( [ $rc = 124 ] && echo ': time limit'); see bench.log"
    tail -15 "$O/bench.log"
  fi
fi

# ---- 7. the table ---------------------------------------------------------------------------------
{
  echo "# scripts/gpu-check.sh, $(date -u '+%Y-%m-%d %H:%M') UTC, trainrun $(git -C "$SRC" describe --always --dirty 2>/dev/null), ${SECONDS}s"
  echo
  echo "| item | value |"
  echo "|---|---|"
  echo "| machine | $GPU, driver $DRIVER; $(nproc) cores |"
  echo "| torch | ${T[version]:-none} ($PY); LibTorch built against: ${LIBTORCH:-none} |"
  echo "| CUDA | torch built for ${T[cuda]:-None}, available ${T[available]:-False}; cuDNN ${T[cudnn]:--}; nvcc $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none) |"
  echo "| dependencies | ${DEPS:-Debian packages (--system)} |"
  echo "| build | ${STATUS[build]}: ${NOTE[build]:-} |"
  echo "| gpu tests | ${STATUS[gpu tests]}: ${NOTE[gpu tests]:-} |"
  [ -n "${SKIPS:-}" ] && echo "| gpu tests skipped: why | $SKIPS |"
  if [ ${#BENCH_LINES[@]} -gt 0 ]; then
    for l in "${BENCH_LINES[@]}"; do echo "| bench ${l%%|*} | ${l#*|} |"; done
  else
    echo "| bench | ${STATUS[bench]}: ${NOTE[bench]:-} |"
  fi
  for p in "${PARTS[@]}"; do [ "${STATUS[$p]}" = FAILED ] && echo "| FAILED | $p: ${NOTE[$p]} |"; done
} > "$O/summary.md"
echo
cat "$O/summary.md"
echo
log "logs and table in $O"
for p in "${PARTS[@]}"; do [ "${STATUS[$p]}" = FAILED ] && exit 1; done
exit 0
