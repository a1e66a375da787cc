#!/usr/bin/env bash
# Per kernel of a cuobjdump -sass listing: the instructions the contract pins (MUFU.RSQ, the
# BF16/F16 conversions, FFMA/FMUL/FADD), the width of global loads and stores, and CCTL (cache
# invalidations: an acquire at cluster scope that also orders global memory costs one a row sum).
#   sass_summary.sh FILE.sass
awk '
  /Function :/ { name = $3; order[++n] = name }
  name != "" {
    for (i = 1; i <= NF; i++) {
      op = $i; sub(/;$/, "", op)
      if (op ~ /^(MUFU\.RSQ|F2FP\.[A-Z0-9.]+|F2F\.[A-Z0-9.]+|FFMA|FMUL|FADD|LDG\.E[A-Z0-9.]*|STG\.E[A-Z0-9.]*|LDL[A-Z0-9.]*|STL[A-Z0-9.]*|CCTL[A-Z0-9.]*)$/) { count[name, op]++; ops[op] = 1 }
    }
  }
  END {
    for (k = 1; k <= n; k++) {
      printf "%s\n", order[k]
      for (op in ops) if ((order[k], op) in count) printf "  %-24s %d\n", op, count[order[k], op]
    }
  }' "$1"
