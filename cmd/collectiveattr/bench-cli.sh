#!/usr/bin/env bash
# make bench-cli: `collectiveattr attribute` of a base commit against this tree's, end to
# end on the same file, run alternately.
#
# Builds the base commit's CLI from `git archive BASE` in a temporary directory and this
# tree's CLI, writes a stormlog JSON Lines file with `gpujobsim -fast -stormlog` (RANKS
# ranks, 5 minutes at 10 Hz: 3 000 samples per rank, plus NCCL collective events and phase
# boundaries), checks that both print the same results, then runs them ROUNDS times each,
# alternating, and prints wall time and peak RSS per run and the medians of the per-round
# ratios. On a shared machine a slow spell hits one run and not the next: read the medians.
#
#   BASE=8c9c5f4 RANKS=64 ROUNDS=5 ARGS=--phases bash cmd/collectiveattr/bench-cli.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE=${BASE:-8c9c5f4}
RANKS=${RANKS:-64}
ROUNDS=${ROUNDS:-5}
ARGS=${ARGS:-}
GO=${GO:-go}
[[ -x /usr/bin/time ]] || { echo "bench-cli: needs /usr/bin/time (GNU time) for peak RSS" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "building the CLI of $BASE and of this tree"
mkdir "$tmp/base"
git archive "$BASE" | tar -x -C "$tmp/base"
(cd "$tmp/base" && "$GO" build -o "$tmp/collectiveattr-base" ./cmd/collectiveattr)
"$GO" build -o "$tmp/collectiveattr-new" ./cmd/collectiveattr
"$GO" build -o "$tmp/gpujobsim" ./cmd/gpujobsim

input=$tmp/run.jsonl
"$tmp/gpujobsim" -ranks "$RANKS" -rate 10 -duration 300s -fast -epoch 2026-01-01T00:00:00Z \
  -otlp-endpoint "" -stormlog "$input" -quiet
size=$(stat -c %s "$input")
echo "input: $RANKS ranks x 3000 samples, $(wc -l <"$input") records, $((size / 1000000)) MB"

# shellcheck disable=SC2086 # ARGS are flags, split on purpose
"$tmp/collectiveattr-base" attribute $ARGS "$input" >"$tmp/out-base.json"
# shellcheck disable=SC2086
"$tmp/collectiveattr-new" attribute $ARGS "$input" >"$tmp/out-new.json"
cmp -s "$tmp/out-base.json" "$tmp/out-new.json" || { echo "bench-cli: the results differ" >&2; exit 1; }
echo "results: identical ($(grep -o '"rank"' "$tmp/out-new.json" | wc -l) intervals)"

# measure NAME: one run; prints "wall_s rss_kb cpu_s".
measure() {
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$tmp/collectiveattr-$1" attribute $ARGS "$input" >/dev/null
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp/time"
}

printf '%-6s %10s %10s %8s   %10s %10s %8s   %9s %9s\n' round "base s" "new s" "speedup" "base MB" "new MB" "RSS/in" "base cpu" "new cpu"
: >"$tmp/ratios"
for r in $(seq 1 "$ROUNDS"); do
  # Alternate which goes first, so that neither always follows the other.
  if ((r % 2)); then
    read -r bw bm bc < <(measure base)
    read -r nw nm nc < <(measure new)
  else
    read -r nw nm nc < <(measure new)
    read -r bw bm bc < <(measure base)
  fi
  ratio=$(awk -v b="$bw" -v n="$nw" 'BEGIN { printf "%.2f", (n > 0 ? b / n : 0) }')
  rss=$(awk -v m="$nm" -v s="$size" 'BEGIN { printf "%.2f", m * 1024 / s }')
  cpu=$(awk -v b="$bc" -v n="$nc" 'BEGIN { printf "%.2f", (n > 0 ? b / n : 0) }')
  echo "$ratio $cpu $bw $nw $bm $nm" >>"$tmp/ratios"
  printf '%-6s %10s %10s %7sx   %10d %10d %8s   %9s %9s\n' "$r" "$bw" "$nw" "$ratio" $((bm / 1024)) $((nm / 1024)) "$rss" "$bc" "$nc"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
echo "median wall speedup:   $(cut -d' ' -f1 "$tmp/ratios" | median)x"
echo "median CPU-time ratio: $(cut -d' ' -f2 "$tmp/ratios" | median)x"
echo "median wall:           base $(cut -d' ' -f3 "$tmp/ratios" | median) s, new $(cut -d' ' -f4 "$tmp/ratios" | median) s"
echo "median peak RSS:       base $(($(cut -d' ' -f5 "$tmp/ratios" | median | cut -d. -f1) / 1024)) MB, new $(($(cut -d' ' -f6 "$tmp/ratios" | median | cut -d. -f1) / 1024)) MB ($(awk -v m="$(cut -d' ' -f6 "$tmp/ratios" | median)" -v s="$size" 'BEGIN { printf "%.2f", m * 1024 / s }')x the input)"
