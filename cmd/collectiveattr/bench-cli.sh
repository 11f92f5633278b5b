#!/usr/bin/env bash
# make bench-cli: `collectiveattr attribute` of a base commit against this tree's, end to
# end on the same file, run alternately.
#
# Builds the CLI of each base commit from `git archive BASE` in a temporary directory and
# this tree's CLI, writes a stormlog JSON Lines file with `gpujobsim -fast -stormlog` (RANKS
# ranks, 5 minutes at 10 Hz: 3 000 samples per rank, plus NCCL collective events and phase
# boundaries), checks that all print the same results, then runs them ROUNDS times each,
# in turn, and prints wall time, CPU time (user + system) and peak RSS per run and the
# medians of the per-round ratios. On a shared machine a slow spell hits one run and not
# the next, and wall time suffers more than CPU time: read the medians, and the CPU ratio.
#
#   BASE="8c9c5f4 1872e50" RANKS=64 ROUNDS=5 ARGS=--phases bash cmd/collectiveattr/bench-cli.sh
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

# BASE may name several commits ("8c9c5f4 1872e50"): each is built and timed
# in the same rounds.
read -r -a bases <<<"$BASE"
echo "building the CLI of ${bases[*]} and of this tree"
for b in "${bases[@]}"; do
  mkdir "$tmp/src-$b"
  git archive "$b" | tar -x -C "$tmp/src-$b"
  (cd "$tmp/src-$b" && "$GO" build -o "$tmp/collectiveattr-$b" ./cmd/collectiveattr)
done
"$GO" build -o "$tmp/collectiveattr-new" ./cmd/collectiveattr
"$GO" build -o "$tmp/gpujobsim" ./cmd/gpujobsim

input=$tmp/run.jsonl
"$tmp/gpujobsim" -ranks "$RANKS" -rate 10 -duration 300s -fast -epoch 2026-01-01T00:00:00Z \
  -otlp-endpoint "" -stormlog "$input" -quiet
size=$(stat -c %s "$input")
echo "input: $RANKS ranks x 3000 samples, $(wc -l <"$input") records, $((size / 1000000)) MB"

# shellcheck disable=SC2086 # ARGS are flags, split on purpose
"$tmp/collectiveattr-new" attribute $ARGS "$input" >"$tmp/out-new.json"
for b in "${bases[@]}"; do
  # shellcheck disable=SC2086
  "$tmp/collectiveattr-$b" attribute $ARGS "$input" >"$tmp/out-$b.json"
  cmp -s "$tmp/out-$b.json" "$tmp/out-new.json" || { echo "bench-cli: the results of $b differ" >&2; exit 1; }
done
echo "results: identical ($(grep -o '"rank"' "$tmp/out-new.json" | wc -l) intervals)"

# measure NAME: one run; prints "wall_s rss_kb cpu_s" (cpu: user + system).
measure() {
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" "$tmp/collectiveattr-$1" attribute $ARGS "$input" >/dev/null
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp/time"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

printf '%-6s %-10s %8s %8s %8s   %8s %8s\n' round cli "wall s" "cpu s" "RSS MB" "wall x" "cpu x"
names=("${bases[@]}" new)
for r in $(seq 1 "$ROUNDS"); do
  # Rotate which goes first, so that none always follows another.
  order=()
  for i in "${!names[@]}"; do order+=("${names[$(((i + r) % ${#names[@]}))]}"); done
  for n in "${order[@]}"; do
    read -r w m c < <(measure "$n")
    echo "$w $m $c" >"$tmp/run-$n-$r"
  done
  read -r nw nm nc <"$tmp/run-new-$r"
  for n in "${names[@]}"; do
    read -r w m c <"$tmp/run-$n-$r"
    wx=$(awk -v b="$w" -v n="$nw" 'BEGIN { printf "%.2f", (n > 0 ? b / n : 0) }')
    cx=$(awk -v b="$c" -v n="$nc" 'BEGIN { printf "%.2f", (n > 0 ? b / n : 0) }')
    echo "$w $c $m $wx $cx" >>"$tmp/series-$n"
    printf '%-6s %-10s %8s %8s %8d   %7sx %7sx\n' "$r" "$n" "$w" "$c" $((m / 1024)) "$wx" "$cx"
  done
done

echo "medians over $ROUNDS rounds (x: the base's time over this tree's, per round):"
for n in "${names[@]}"; do
  col() { cut -d' ' -f"$1" "$tmp/series-$n" | median; }
  rss=$(col 3)
  printf '  %-10s wall %6s s  cpu %6s s  peak RSS %5d MB (%.2fx the input)' "$n" "$(col 1)" "$(col 2)" $((${rss%.*} / 1024)) "$(awk -v m="$rss" -v s="$size" 'BEGIN { print m * 1024 / s }')"
  [[ $n == new ]] && { echo; continue; }
  echo "  speedup: wall $(col 4)x, cpu $(col 5)x"
done
