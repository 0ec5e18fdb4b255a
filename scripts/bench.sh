#!/usr/bin/env bash
# The speed and memory targets beside what this machine measures.
# Usage: scripts/bench.sh [OUTDIR]   (default out/bench)
# COUNT (default 5) repeats each Go benchmark, E2E_RUNS (default 3) each
# end-to-end mode, WALL_RUNS (default 7) each whole-process eval; the
# table gives medians (and, for whole processes, the best run).
# RSS_RECORDS (default 10000000; 0 skips it) sets the memory run's length.
# The C++ peer is measured side by side by scripts/peer.sh (PEER_RUNS,
# default 5; PEER_COPIES, default 1; skipped, and said, without the peer).
# Raw outputs land in OUTDIR; the table is printed last and saved as
# OUTDIR/table.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/bench}
count=${COUNT:-5}
mkdir -p "$out"
make -s build

step() { # file, command...
  local f=$1; shift
  echo "\$ $*" | tee "$out/$f"
  "$@" 2>&1 | tee -a "$out/$f"
}
# The learners the C++ peer has, in its same-work configurations, at B=100
# and B=500.
peer='rbp:budget=100|forgetron:budget=100|projectron:eta=0,max=100|projectron\+\+:eta=0,max=100,u=1.16952'
b500='rbp:budget=500|forgetron:budget=500|projectron:eta=0,max=500|projectron\+\+:eta=0,max=500,u=2.24431'
step offline.txt go test -run '^$' -bench "A9APass/(perceptron|$peer|$b500)\$" -benchtime 3x -count "$count" ./internal/offline/
step dense.txt go test -run '^$' -bench 'KernelRowDense|DotDense|MulInverse' -count "$count" ./learners/
step load.txt go test -run '^$' -bench 'LoadA9A' -count "$count" ./codec/dataset/
step rounds.txt go test -run '^$' -bench 'RoundFullBudget' -benchmem ./learners/
step codec.txt go test -run '^$' -bench 'AppendPrediction' -benchmem ./codec/
# Whole processes, as the peer was timed: start-up, gunzip, parsing, one
# pass and the report, wall-clock; prints "spec best median" in seconds.
wall() {
  local spec=$1 kernel=$2 t=() s e
  for _ in $(seq "${WALL_RUNS:-7}"); do
    s=$(date +%s%N)
    bin/streamlearner eval --data testdata/a9a.gz --kernel "$kernel" --keep-order --learner "$spec" >/dev/null
    e=$(date +%s%N)
    t+=($((e - s)))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk -v s="$spec" '{v[NR] = $1} END {printf "%s %.3f %.3f\n", s, v[1] / 1e9, v[int((NR + 1) / 2)] / 1e9}'
}
{
  echo "\$ eval over testdata/a9a.gz, whole process, best and median of ${WALL_RUNS:-7} (s)"
  wall perceptron:max=1 linear
  IFS='|' read -r -a specs <<<"$peer|$b500"
  for spec in "${specs[@]}"; do wall "${spec//\\/}" rbf:gamma=0.01; done
} | tee "$out/wall.txt"
RUNS=${PEER_RUNS:-5} COPIES=${PEER_COPIES:-1} step peer.txt scripts/peer.sh
# Start-up: the CPU (user + sys) of `streamlearner --version`, per run,
# over 50 runs.
{
  echo "\$ streamlearner --version, 50 runs, CPU per run (ms)"
  TIMEFORMAT='%U %S'
  { time (for _ in $(seq 50); do bin/streamlearner --version >/dev/null; done); } 2>&1 | awk '{printf "%.2f\n", ($1 + $2) * 1000 / 50}'
} | tee "$out/startup.txt"
# eval's single pass streams: peak RSS over a9a, and over a9a copied 100
# times (3.26 million records), in KiB.
{
  echo "\$ eval --keep-order, perceptron:max=1 linear, peak RSS (KiB): a9a, a9a x100"
  big=${TMPDIR:-/tmp}/streamlearner-a9a-x100
  [ -s "$big" ] || for _ in $(seq 100); do gzip -dc testdata/a9a.gz; done >"$big"
  for f in testdata/a9a.gz "$big"; do
    /usr/bin/time -f '%M' bin/streamlearner eval --data "$f" --keep-order --learner perceptron:max=1 --kernel linear 2>&1 >/dev/null | tail -1
  done
} | tee "$out/stream.txt"
step e2e.txt bin/streamlearner bench --records 1000000 --runs "${E2E_RUNS:-3}"
step partitions.txt bin/streamlearner bench --records 300000 --learn-only --runs "${E2E_RUNS:-3}" --partitions 4,64,256
if [ "${RSS_RECORDS:-10000000}" != 0 ]; then
  step rss.txt bin/streamlearner bench --records "${RSS_RECORDS:-10000000}" --learn-only
fi

# median of the values of metric $2 on the lines matching $1 in file $3
med() {
  grep -E "$1" "$3" | awk -v m="$2" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2] + v[NR/2+1]) / 2}'
}
row() { # target, required, measured, unit, ratio text, met
  printf '%-44s %-14s %-16s %-22s %s\n' "$1" "$2" "$3 $4" "$5" "$6"
}
ok() { awk -v a="$1" -v b="$2" 'BEGIN {print (a >= b) ? "met" : "NOT met"}'; }
{
  echo
  echo "speed and memory targets on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; medians of $count"
  row target required measured "" ratio ""
  IFS='|' read -r -a specs <<<"perceptron|$peer|$b500"
  for spec in "${specs[@]}"; do
    v=$(med "A9APass/$spec-" examples/s "$out/offline.txt")
    row "a9a one pass, ${spec//\\/}" "" "$(printf %.0f "$v")" "/s" "" ""
  done
  # The peer, side by side in this run (scripts/peer.sh): whole eval
  # processes, CPU (user + sys) ours/peer, median of the per-pair ratios.
  if grep -q '^a9a\.x' "$out/peer.txt"; then
    grep '^a9a\.x' "$out/peer.txt" | while read -r data spec _ _ oc _ _ _ r; do
      row "eval $data whole process, $spec" "cpu <= 0.33 peer" "$oc" "s cpu" "$r of the peer's cpu" "$(ok 0.33 "$r")"
    done
  else
    row "eval a9a whole process vs the peer" "cpu <= 0.33 peer" "-" "" "no peer (scripts/peer.sh)" ""
  fi
  IFS='|' read -r -a specs <<<"perceptron:max=1"
  for spec in "${specs[@]}"; do
    read -r _ best median < <(grep -F "$spec " "$out/wall.txt")
    row "eval a9a whole process, $spec" "" "$best" "s best" "(median $median s)" ""
  done
  st=$(tail -1 "$out/startup.txt")
  row "start-up, streamlearner --version" "<= 10 ms cpu" "$st" "ms cpu" "" "$(ok 10 "$st")"
  read -r small large < <(tail -2 "$out/stream.txt" | tr '\n' ' ')
  row "eval one pass, 3.26M records, peak RSS" "<= 100 MB" "$((large / 1024))" "MB" "a9a alone: $((small / 1024)) MB" "$(ok 102400 "$large")"
  lt=$(med LoadA9A ns/op "$out/load.txt")
  row "load a9a in process (gunzip, parse)" "" "$(awk -v t="$lt" 'BEGIN {printf "%.1f", t/1e6}')" ms "" ""
  k=$(med KernelRowDense GFLOP/s "$out/dense.txt"); d=$(med DotDense GFLOP/s "$out/dense.txt")
  row "dense kernel row, d=784 B=500 rbf" ">= 7 GFLOP/s" "$k" GFLOP/s "$(awk -v k="$k" -v d="$d" 'BEGIN {printf "%.2f of dot (%.2f)", k/d, d}')" "$(ok "$k" 7)"
  m=$(med 'MulInverse/500' GFLOP/s "$out/dense.txt")
  row "Projectron K⁻¹k, B=500" "" "$m" GFLOP/s "" ""
  a=$(grep -E 'RoundFullBudget' "$out/rounds.txt" | awk '{for (i = 2; i <= NF; i++) if ($i == "allocs/op") print $(i-1)}' | sort -g | tail -1)
  row "allocs per steady-state round (max)" "0" "$a" "" "" "$(ok 0 "$a")"
  e=$(grep 'learning/pass-through' "$out/e2e.txt")
  r=$(echo "$e" | sed -E 's/.*= ([0-9.]+) \(.*/\1/')
  lr=$(echo "$e" | sed -E 's/.*: ([0-9]+) \/ ([0-9]+) .*/\1/'); pr=$(echo "$e" | sed -E 's/.*: ([0-9]+) \/ ([0-9]+) .*/\2/')
  cpu=$(grep -E '^learn ' "$out/e2e.txt" | awk '{print $4}' | sort -g | awk '{v[NR] = $1} END {print v[int((NR+1)/2)]}')
  row "service, 1M records, learning" ">= 0.90 of pass" "$lr" "rec/s" "$r of $pr rec/s; ${cpu} cpu-µs/rec" "$(ok "$r" 0.90)"
  pc=$(grep 'pass-through CPU' "$out/e2e.txt" | sed -E 's/.*: ([0-9.]+) µs.*/\1/')
  row "service pass-through, CPU per record" "<= 3 µs" "$pc" "µs" "consume, decode, encode, produce" "$(ok 3 "$pc")"
  o=$(grep 'learning in the service' "$out/e2e.txt")
  ov=$(echo "$o" | sed -E 's/.*; ([0-9.]+)× \(.*/\1/')
  row "service learning / eval's round, CPU" "<= 1.10" "$ov" "x" "$(echo "$o" | sed -E 's/learning in the service: ([^;]*); eval: ([^;]*);.*/\1 vs eval \2/')" "$(ok 1.10 "$ov")"
  if [ -s "$out/partitions.txt" ]; then
    pc=$(grep 'CPU per record, 256 partitions / ' "$out/partitions.txt" | sed -E 's/.* = ([0-9.]+) \(.*/\1/')
    row "service CPU/record, 256 partitions / 4" "<= 1.3" "$pc" "x" "rbp B=100, 300,000 records" "$(ok 1.3 "$pc")"
    pr=$(grep 'peak RSS, 256 partitions − 4:' "$out/partitions.txt")
    pg=$(echo "$pr" | sed -E 's/.* = ([-+0-9.]+) MB \(.*/\1/'); pa=$(echo "$pr" | sed -E 's/.*= ([0-9.]+) MB: .*/\1/')
    row "service RSS growth, 4 -> 256 partitions" "<= $pa MB" "$pg" "MB" "models + 100 kB a partition + the fetch budget 4 leave unfilled" "$(echo "$pr" | grep -q 'unfilled = [0-9.]* MB: met' && echo met || echo 'NOT met')"
    # From 64 partitions on the member-wide budgets are full: what grows
    # is the partitions' own.
    pf=$(grep 'budgets full' "$out/partitions.txt")
    if [ -n "$pf" ]; then
      pk=$(echo "$pf" | sed -E 's/.* MB, ([0-9]+) kB a partition.*/\1/'); pt=$(echo "$pf" | sed -E 's/.*target ≤ model ([0-9]+) kB \+ ([0-9]+) kB.*/\1 + \2/')
      row "service RSS a partition, 64 -> 256" "<= $pt kB" "$pk" "kB" "budgets full at both" "$(echo "$pf" | grep -q ': met' && echo met || echo 'NOT met')"
    fi
  fi
  if [ -s "$out/rss.txt" ]; then
    m=$(grep 'resident memory' "$out/rss.txt")
    peak=$(echo "$m" | sed -E 's/.*peak ([0-9]+) MB.*/\1/'); g=$(echo "$m" | sed -E 's/.*half ([-+0-9.]+) MB.*/\1/')
    row "RSS over ${RSS_RECORDS:-10000000} records, rbp B=100" "flat" "$peak" "MB peak" "${g} MB in the 2nd half" "$(echo "$m" | grep -q ': flat' && echo met || echo 'NOT met')"
  fi
} | tee "$out/table.txt"
