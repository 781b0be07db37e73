#!/usr/bin/env bash
# Runs a fuzz target for SECONDS while another process sends it SIGALRM every half millisecond.
# libFuzzer's -timeout installs its SIGALRM handler without SA_RESTART, so any system call of the
# harness can fail with EINTR when the timer fires; in CI that happened once in a few hundred
# thousand inputs (fuzz_util.h, harness_step). Here it happens within seconds: the target must
# run to the end (exit 0), the harness retrying what was interrupted.
#   fuzz/alarm_storm.sh TARGET_BINARY SECONDS CORPUS_DIR
set -euo pipefail
target=$1 seconds=$2 corpus=$3
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$corpus" "$work/corpus"  # libFuzzer adds what it finds to its first corpus folder
ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" "$target" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=4096 -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1 &
pid=$!
# Start the storm once the corpus has been read (the fuzzing loop runs), not during start-up.
for _ in $(seq 600); do grep -q -m1 -E '^#[0-9]+\s+(INITED|NEW|pulse)' "$work/log" && break; sleep 0.1; done
/usr/bin/python3 - "$pid" <<'PY' >"$work/storm"
import os, signal, sys, time
pid, sent = int(sys.argv[1]), 0
while True:
    try:
        os.kill(pid, signal.SIGALRM)
    except ProcessLookupError:
        break
    sent += 1
    time.sleep(0.0005)
print(sent)
PY
rc=0
wait "$pid" || rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log")
echo "alarm_storm: $(basename "$target"): exit $rc, ${runs:-?} inputs in $seconds s, $(cat "$work/storm") SIGALRMs sent"
if [ "$rc" -ne 0 ]; then
  grep -E '^(harness:|finding:|==[0-9]+== ?ERROR|SUMMARY)' "$work/log" || tail -20 "$work/log"
  exit 1
fi
