#!/usr/bin/env bash
# CPU per record of `collectiveattr attribute` at 64 and at 2 048 ranks (issue 33's bar:
# flat within 20 %, member lists on every marker), of base commits and of this tree, the
# built CLIs alternated in one run.
#
# Both jobs are DURATION of job time (default 60 s; at 2 048 ranks 2.3 M records, 4.5 GB)
# written by `gpujobsim -fast -member-lists every`. The simulator injects the same spikes
# into a job whatever its length, so only jobs of equal duration have the same results
# per record: a short 2 048-rank job beside a long 64-rank one would compare the result
# density as well as the records (docs/sizing.md § The CLI). A 64-rank run takes about
# 0.15 s of CPU and GNU time counts 10 ms, so it is timed REPEAT times in a row.
#
# Prints, per round, each CLI's user + system CPU per record by ranks and mode; then the
# medians and the ratio 2 048 / 64 per CLI and mode (of the medians, and the median of
# the rounds' ratios). DIR keeps the files between runs (generated when absent).
#
#   BASE=6d5168f ROUNDS=7 DIR=/tmp/ranks bash cmd/collectiveattr/bench-ranks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE=${BASE:-main}
ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-60s}
REPEAT=${REPEAT:-8}
DIR=${DIR:-$(mktemp -d)}
GO=${GO:-go}
[[ -x /usr/bin/time ]] || { echo "bench-ranks: needs /usr/bin/time (GNU time)" >&2; exit 1; }
mkdir -p "$DIR"

read -r -a bases <<<"$BASE"
for b in "${bases[@]}"; do
  src=$(mktemp -d)
  git archive "$b" | tar -x -C "$src"
  (cd "$src" && "$GO" build -o "$DIR/collectiveattr-$b" ./cmd/collectiveattr)
  rm -rf "$src"
done
"$GO" build -o "$DIR/collectiveattr-new" ./cmd/collectiveattr
"$GO" build -o "$DIR/gpujobsim" ./cmd/gpujobsim
names=("${bases[@]}" new)

declare -A records
for ranks in 64 2048; do
  f=$DIR/r$ranks-$DURATION.jsonl
  [[ -s $f ]] || "$DIR/gpujobsim" -ranks "$ranks" -rate 10 -duration "$DURATION" -fast -member-lists every \
    -epoch 2026-01-01T00:00:00Z -otlp-endpoint "" -stormlog "$f" -quiet
  records[$ranks]=$(wc -l <"$f")
  echo "r$ranks: ${records[$ranks]} records, $(($(stat -c %s "$f") / ${records[$ranks]})) B a record"
  for mode in reference evidence; do
    "$DIR/collectiveattr-new" attribute -q --mode "$mode" "$f" >"$DIR/out-new"
    for b in "${bases[@]}"; do
      "$DIR/collectiveattr-$b" attribute -q --mode "$mode" "$f" | cmp -s - "$DIR/out-new" ||
        { echo "bench-ranks: $b's $mode results differ at $ranks ranks" >&2; exit 1; }
    done
  done
done
echo "results identical"

# cpu NAME RANKS MODE: microseconds of user + system CPU per record.
cpu() {
  local f=$DIR/r$2-$DURATION.jsonl n=1
  [[ $2 == 64 ]] && n=$REPEAT
  /usr/bin/time -f '%U %S' -o "$DIR/time" sh -c \
    "for i in \$(seq $n); do '$DIR/collectiveattr-$1' attribute -q --mode $3 '$f' >/dev/null; done"
  awk -v r="${records[$2]}" -v n="$n" '{ printf "%.3f", ($1 + $2) * 1e6 / (r * n) }' "$DIR/time"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

rm -f "$DIR"/series-*
for r in $(seq 1 "$ROUNDS"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  for mode in reference evidence; do
    for i in "${!names[@]}"; do
      n=${names[$(((i + r) % ${#names[@]}))]}
      a=$(cpu "$n" 64 "$mode")
      b=$(cpu "$n" 2048 "$mode")
      echo "$a $b $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')" >>"$DIR/series-$n-$mode"
      echo "round $r load $load $mode $n: 64 ranks $a us, 2048 ranks $b us a record"
    done
  done
done

echo "medians over $ROUNDS rounds, us a record (2048/64: ratio of the medians; median of the rounds' ratios):"
for mode in reference evidence; do
  for n in "${names[@]}"; do
    s=$DIR/series-$n-$mode
    a=$(cut -d' ' -f1 "$s" | median) b=$(cut -d' ' -f2 "$s" | median) q=$(cut -d' ' -f3 "$s" | median)
    printf '  %-9s %-10s 64: %s  2048: %s  2048/64: %.2f; %s\n' "$mode" "$n" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')" "$q"
  done
done
