#!/usr/bin/env bash
# Prints the ctest arguments that select a list's part of the suite: -R for its `run` groups and
# -E for its `leave-tests` patterns, quoted for a shell (tests/second_stack.txt and
# tests/asan_selection.txt say what each list is and its grammar).
#   scripts/test-selection.sh LIST     e.g. make test CTEST_ARGS="$(scripts/test-selection.sh tests/second_stack.txt)"
# One alternation of anchored names, not one parenthesised group per name: CMake's regular
# expressions allow at most nine parenthesised groups.
set -euo pipefail
list=${1:?usage: scripts/test-selection.sh LIST}
[ -r "$list" ] || { echo "test-selection: cannot read $list" >&2; exit 2; }
run=$(awk '$1 == "run" {for (i = 2; i <= NF; i++) printf "%s^%s[./]", (n++ ? "|" : ""), $i}' "$list")
leave=$(awk '$1 == "leave-tests" {sub(/^leave-tests /, ""); print}' "$list" | paste -sd'|' -)
[ -n "$run" ] || { echo "test-selection: $list has no run line" >&2; exit 2; }
printf "%s '%s'" -R "$run"
[ -z "$leave" ] || printf " %s '%s'" -E "$leave"
echo
