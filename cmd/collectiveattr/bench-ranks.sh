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
# A run also costs a fixed amount whatever its records (the process's start: about 10 ms of
# CPU, 0.13 us a record of the 60 s 64-rank job, 0.004 at 2 048 ranks). Each round times a
# run of the 64-rank job's first 200 records too (TINY_REPEAT times) and also gives the
# per-record figures net of it: (CPU of a run - CPU of the 200-record run) / (records - 200).
#
# Prints, per round, each CLI's user + system CPU per record by ranks and mode; then the
# medians and the ratio 2 048 / 64 per CLI and mode (of the medians, and the median of
# the rounds' ratios), as measured and net of the fixed cost. DIR keeps the files between
# runs (generated when absent).
#
#   BASE=6d5168f ROUNDS=7 DIR=/tmp/ranks bash cmd/collectiveattr/bench-ranks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE=${BASE:-main}
ROUNDS=${ROUNDS:-7}
DURATION=${DURATION:-60s}
REPEAT=${REPEAT:-8}
TINY_REPEAT=${TINY_REPEAT:-40}
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
  echo "r$ranks: ${records[$ranks]} records, $(($(stat -L -c %s "$f") / ${records[$ranks]})) B a record"
  for mode in reference evidence; do
    "$DIR/collectiveattr-new" attribute -q --mode "$mode" "$f" >"$DIR/out-new"
    for b in "${bases[@]}"; do
      "$DIR/collectiveattr-$b" attribute -q --mode "$mode" "$f" | cmp -s - "$DIR/out-new" ||
        { echo "bench-ranks: $b's $mode results differ at $ranks ranks" >&2; exit 1; }
    done
  done
done
echo "results identical"
head -n 200 "$DIR/r64-$DURATION.jsonl" >"$DIR/tiny.jsonl"

# cpu NAME FILE REPEAT MODE: seconds of user + system CPU of one run.
cpu() {
  /usr/bin/time -f '%U %S' -o "$DIR/time" sh -c \
    "for i in \$(seq $3); do '$DIR/collectiveattr-$1' attribute -q --mode $4 '$2' >/dev/null; done"
  awk -v n="$3" '{ printf "%.6f", ($1 + $2) / n }' "$DIR/time"
}

# per RUN_S FIXED_S RECORDS: microseconds a record, of the run and net of the fixed cost.
per() { awk -v c="$1" -v f="$2" -v r="$3" 'BEGIN { printf "%.3f %.3f\n", c * 1e6 / r, (c - f) * 1e6 / (r - 200) }'; }

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

rm -f "$DIR"/series-*
for r in $(seq 1 "$ROUNDS"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  for mode in reference evidence; do
    for i in "${!names[@]}"; do
      n=${names[$(((i + r) % ${#names[@]}))]}
      fixed=$(cpu "$n" "$DIR/tiny.jsonl" "$TINY_REPEAT" "$mode")
      read -r a an < <(per "$(cpu "$n" "$DIR/r64-$DURATION.jsonl" "$REPEAT" "$mode")" "$fixed" "${records[64]}")
      read -r b bn < <(per "$(cpu "$n" "$DIR/r2048-$DURATION.jsonl" 1 "$mode")" "$fixed" "${records[2048]}")
      awk -v a="$a" -v b="$b" -v an="$an" -v bn="$bn" 'BEGIN { printf "%s %s %.3f %s %s %.3f\n", a, b, b / a, an, bn, bn / an }' >>"$DIR/series-$n-$mode"
      echo "round $r load $load $mode $n: fixed $(awk -v f="$fixed" 'BEGIN { printf "%.1f", f * 1e3 }') ms; us a record: 64 ranks $a (net $an), 2048 ranks $b (net $bn)"
    done
  done
done

echo "medians over $ROUNDS rounds, us a record (2048/64: ratio of the medians; median of the rounds' ratios):"
for mode in reference evidence; do
  for n in "${names[@]}"; do
    s=$DIR/series-$n-$mode
    m() { cut -d' ' -f"$1" "$s" | median; }
    printf '  %-9s %-10s 64: %s  2048: %s  2048/64: %.2f; %s   net of the fixed cost: 64: %s  2048: %s  2048/64: %.2f; %s\n' \
      "$mode" "$n" "$(m 1)" "$(m 2)" "$(awk -v a="$(m 1)" -v b="$(m 2)" 'BEGIN { print b / a }')" "$(m 3)" \
      "$(m 4)" "$(m 5)" "$(awk -v a="$(m 4)" -v b="$(m 5)" 'BEGIN { print b / a }')" "$(m 6)"
  done
done
