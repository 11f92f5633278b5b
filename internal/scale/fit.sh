#!/usr/bin/env bash
# fit.sh: the growth exponent of each scale benchmark, from `go test -bench` output on stdin.
#
# A scale benchmark names its size as a sub-benchmark "ranks=N" or "members=N"
# (internal/scale.Sizes). For each benchmark, the sizes it ran at are fitted by least squares
# as time = c * n^k on log-log axes, time being cpu-ns/op when reported (CPU time: steadier on
# a shared machine) and ns/op otherwise; bytes likewise from B/op. A path fails when k exceeds
# the exponent n log n has over the same sizes (1 + ln(ln nmax / ln nmin) / ln(nmax / nmin),
# 1.15 from 64 to 16 384) plus TOL (default 0.10, for noise). Prints one line per benchmark and
# exits 1 when any fails; a benchmark run at fewer than 3 sizes is listed, not judged.
#
#   COLLECTIVEATTR_SCALE_MAX=16384 go test -run '^$' -bench Scale -benchtime 3x ./... | bash internal/scale/fit.sh
set -euo pipefail
TOL=${TOL:-0.10}
awk -v tol="$TOL" '
function fit(key, what,    i, n, sx, sy, sxx, sxy, x, y) {
  n = cnt[key]; sx = sy = sxx = sxy = 0
  for (i = 1; i <= n; i++) {
    x = log(size[key, i]); y = log(val[what, key, i])
    sx += x; sy += y; sxx += x * x; sxy += x * y
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx)
}
/^Benchmark/ {
  name = $1
  sub(/-[0-9]+$/, "", name)
  if (!match(name, /(ranks|members)=[0-9]+/)) next
  n = substr(name, RSTART, RLENGTH); sub(/.*=/, "", n)
  m = substr(name, RSTART, RLENGTH); sub(/=[0-9]+$/, "=*", m)
  key = substr(name, 1, RSTART - 1) m substr(name, RSTART + RLENGTH)
  t = ""; b = ""
  for (i = 3; i < NF; i++) {
    if ($(i + 1) == "ns/op" && t == "") t = $i
    if ($(i + 1) == "cpu-ns/op") t = $i
    if ($(i + 1) == "B/op") b = $i
  }
  if (t == "") next
  if (!(key in cnt)) order[++keys] = key
  c = ++cnt[key]
  size[key, c] = n + 0; val["t", key, c] = t + 0; val["b", key, c] = (b == "" ? 0 : b + 0)
  if (b == "" || b + 0 <= 0) nobytes[key] = 1
}
END {
  bad = 0
  printf "%-64s %6s %6s %6s %6s %6s  %s\n", "benchmark", "from", "to", "k_time", "k_mem", "bound", "verdict"
  for (j = 1; j <= keys; j++) {
    key = order[j]; n = cnt[key]
    lo = hi = size[key, 1]
    for (i = 2; i <= n; i++) { if (size[key, i] < lo) lo = size[key, i]; if (size[key, i] > hi) hi = size[key, i] }
    if (n < 3 || lo == hi) { printf "%-64s %6d %6d %6s %6s %6s  %s\n", key, lo, hi, "-", "-", "-", "too few sizes"; continue }
    kt = fit(key, "t")
    km = (key in nobytes) ? "-" : sprintf("%.2f", fit(key, "b"))
    bound = 1 + log(log(hi) / log(lo)) / log(hi / lo)
    verdict = "ok"
    if (kt > bound + tol || (km != "-" && km + 0 > bound + tol)) { verdict = "FAIL: faster than n log n"; bad = 1 }
    printf "%-64s %6d %6d %6.2f %6s %6.2f  %s\n", key, lo, hi, kt, km, bound, verdict
  }
  exit bad
}'
