#!/usr/bin/env bash
# CONTRIBUTING.md's conformance table: runs tests/conformance.rs (every scenario of both pinned suite
# versions) and counts, per suite version and wire, the scenarios run and passed.
#   tests/conformance/table.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo test --quiet --test conformance -- --nocapture 2>/dev/null |
  grep -o $'CONFORMANCE\t.*' | sort -t$'\t' -k2,3 -k4 |
  awk -F'\t' '
    {
      key = $2 (($3 == "default") ? " (the version each scenario names)" : " at " $3)
      if (!(key in run)) order[n++] = key
      run[key]++
      if ($5 == "passed") passed[key]++; else failed[key] = failed[key] ", " $4
    }
    END {
      print "| suite | scenarios run | passed | not passed |"
      print "|---|---|---|---|"
      for (i = 0; i < n; i++) {
        k = order[i]
        printf "| %s | %d | %d | %s |\n", k, run[k], passed[k], (failed[k] == "") ? "none" : substr(failed[k], 3)
      }
    }'
