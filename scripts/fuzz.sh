#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/, built by scripts/sanitize.sh asan-build) for SECONDS each
# (default 60), starting from its seed corpus in fuzz/corpus/<target>/. New inputs go to
# build-asan/fuzz-corpus/<target>/ (kept between runs, never into the repository); an input that
# crashes a target is written to build-asan/fuzz-findings/<target>/ and the script fails, naming
# it. Turn each finding into a fix, then copy the input to fuzz/regressions/<target>/ (replayed by
# ctest as fuzz.<target>) and add a test that checks its error line.
# FUZZ_JOBS targets run at once (default: the number of cores; each target is one process of one
# thread, so every target still gets SECONDS of a core), their lines printed in target order.
#   scripts/fuzz.sh [SECONDS] [TARGET ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}; shift || true
dir=${ASAN_BUILD:-build-asan}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(recipe safetensors idx stl10 image checkpoint launcher_env shard label_file)
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer | head -1)}
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"  # the suite checks leaks; here, speed
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# One target: its lines into $dir/fuzz-findings/<target>.out, exit 1 on a finding.
fuzz_one() {
  local t=$1 corpus="$dir/fuzz-corpus/$1" findings="$dir/fuzz-findings/$1"
  mkdir -p "$corpus" "$findings"
  local log="$dir/fuzz-findings/$t.log"
  # -rss_limit_mb / -malloc_limit_mb: an input that makes a reader allocate more than 4 GiB is a
  # finding (a header that lies about its sizes), as is one that runs a second or longer.
  if "$dir/fuzz/${t}_fuzz" -max_total_time="$seconds" -rss_limit_mb=4096 -malloc_limit_mb=4096 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $t: ${runs:-?} inputs in ${seconds} s, no findings"
  else
    echo "fuzz: $t: FINDING: $(grep -m1 -E '^(finding:|harness:|terminate called|==[0-9]+== ?ERROR|SUMMARY)' "$log" || tail -1 "$log")"
    echo "fuzz: $t: input: $(ls -t "$findings" | head -1 | sed "s|^|$findings/|"); log: $log"
    # CI's root is gone afterwards: what the target printed before it died (an exception's
    # "terminate called ...", a sanitizer's report, the stack) and the input, into CI's output.
    { grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse|INITED|RELOAD)' "$log" || true; } | tail -40 | sed "s|^|fuzz: $t: |"
    f=$(ls -t "$findings" | head -1)
    if [ -n "$f" ] && [ -f "$findings/$f" ]; then
      echo "fuzz: $t: input (base64, first 2 KiB): $(head -c 2048 "$findings/$f" | base64 -w 0)"
    fi
    return 1
  fi
}
jobs_max=${FUZZ_JOBS:-$(nproc)}
declare -A pid_of
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  mkdir -p "$dir/fuzz-findings"
  fuzz_one "$t" >"$dir/fuzz-findings/$t.out" 2>&1 &
  pid_of[$t]=$!
done
failed=()
for t in "${targets[@]}"; do
  wait "${pid_of[$t]}" || failed+=("$t")
  cat "$dir/fuzz-findings/$t.out"
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in: ${failed[*]}"; exit 1; }
