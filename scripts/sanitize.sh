#!/usr/bin/env bash
# Sanitizer builds with clang (Makefile: test-asan, test-tsan, fuzz-build), each in a build
# folder of its own, and their test runs.
#   scripts/sanitize.sh asan [CTEST ARGS]  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer,
#                                          the fuzz targets too; the whole suite (+ fuzz.* replays)
#   scripts/sanitize.sh tsan [CTEST ARGS]  build-tsan: ThreadSanitizer; the data loader, launcher
#                                          and distributed tests
#   scripts/sanitize.sh asan-build         build only
# A finding ends the process that made it (-fno-sanitize-recover, halt_on_error), so it fails its
# test; the report is in the test's output (ctest --output-on-failure).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?asan, tsan or asan-build}; shift
jobs=${JOBS:-$(nproc)}
case "$kind" in
  asan|asan-build) dir=${ASAN_BUILD:-build-asan}; flags=(-DTRAINRUN_SANITIZE=address,undefined -DTRAINRUN_FUZZ=ON) ;;
  tsan) dir=${TSAN_BUILD:-build-tsan}; flags=(-DTRAINRUN_SANITIZE=thread) ;;
  *) echo "sanitize.sh: unknown kind '$kind' (asan, tsan, asan-build)" >&2; exit 2 ;;
esac
# bench/'s programs are for timing, which a sanitizer build is not (no test runs them).
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTRAINRUN_BUILD_BENCH=OFF \
  "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$jobs"
[ "$kind" = asan-build ] && exit 0

here=$(pwd)
# Reports name source lines (llvm-symbolizer comes with clang).
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer | head -1)}
export TSAN_SYMBOLIZER_PATH=$ASAN_SYMBOLIZER_PATH
if [ "$kind" = asan ]; then
  # Leaks: LibTorch's and OpenCV's process-lifetime caches are not trainrun's leaks (suppressions file).
  export ASAN_OPTIONS="halt_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export LSAN_OPTIONS="suppressions=$here/scripts/sanitizers/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  cd "$dir" && exec ctest --output-on-failure -j"$jobs" "$@"
else
  # LibTorch, gloo and OpenMP are not instrumented: what they do inside is suppressed (the file says why).
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$here/scripts/sanitizers/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
  cd "$dir" && exec ctest --output-on-failure -j"$jobs" -R "${TSAN_TESTS:-^(Loader|MnistDataset|Stl|PetsFolder|ImageFolder|DataEndToEnd|Sampler|Distributed|DistributedNodes|Torchrun|Mpirun|Slurm|WorldFailure)\.}" "$@"
fi
