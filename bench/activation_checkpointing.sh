#!/bin/bash
# train.activation_checkpointing against the plain step: build/bench/activation_checkpointing once
# without and once with every stage checkpointed, each in its own process (its own peak RSS), then
# the ratios. Defaults: resnet50d at 224x224, batch 64, fp32, 2 threads, 3 timed steps after one
# warm-up. The load average is printed first and last: other work on the machine slows both.
#
# usage: bench/activation_checkpointing.sh [MODEL=resnet50d] [BATCH=64] [THREADS=2] [STEPS=3] [BUILD=build]
set -euo pipefail
model=${1:-resnet50d} batch=${2:-64} threads=${3:-2} steps=${4:-3} build=${5:-build}
bin="$build/bench/activation_checkpointing"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
plain=$("$bin" "$model" "$batch" "$threads" "$steps" none)
echo "$plain"
ckpt=$("$bin" "$model" "$batch" "$threads" "$steps" true)
echo "$ckpt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
field() { sed -E "s/.*\"$2\": \"?([0-9.]+).*/\1/" <<<"$1"; }
awk -v pm="$(field "$plain" peak_rss_mib)" -v cm="$(field "$ckpt" peak_rss_mib)" \
    -v pb="$(field "$plain" rss_before_mib)" -v cb="$(field "$ckpt" rss_before_mib)" \
    -v pt="$(field "$plain" median_s)" -v ct="$(field "$ckpt" median_s)" 'BEGIN {
  printf "peak RSS: %.0f -> %.0f MiB (%.1f %% less); above the RSS before the first step: %.0f -> %.0f MiB (%.1f %% less)\n",
         pm, cm, 100 * (1 - cm / pm), pm - pb, cm - cb, 100 * (1 - (cm - cb) / (pm - pb))
  printf "median step: %.2f -> %.2f s (%+.1f %%)\n", pt, ct, 100 * (ct / pt - 1)
}'
