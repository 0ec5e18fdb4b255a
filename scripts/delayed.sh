#!/usr/bin/env bash
# What a label delay costs: for each stream, eval plays five learners (four
# budget learners, B = 100, and the unbounded Perceptron) in one pass in
# file order, with every label revealed 0, 10, 100 and 1000 records after
# its record (eval --delay, delayed progressive validation). docs/delayed.md
# quotes the tables.
# Usage: scripts/delayed.sh [elec2|gauss|sea ...]   (default: all three)
# Reads Elec2 from ../shared/datasets (or $DATASETS); writes the streams and
# JSON results to out/delayed (or $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/datasets.sh
out=${OUT:-out/delayed}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(elec2 gauss sea)
delays=(0 10 100 1000)
mkdir -p "$out"
make -s build
sl=bin/streamlearner
learners=(rbp:budget=100 lbp:budget=100 forgetron:budget=100 projectron++:budget=100 perceptron)
flags=()
for l in "${learners[@]}"; do flags+=(--learner "$l"); done

for s in "${sets[@]}"; do
  case $s in
  elec2) # real: 45,312 half-hours of the NSW market, label UP/DOWN
    file=$data/events/elec2.jsonl.gz; kernel=rbf:gamma=1
    # day is the weekday, nominal in elecNormNew: a category, as these tables
    # were measured (the string "2" alone would be the number 2).
    extra=(--label-field class --positive UP --key-field id --ignore-field date --features day:categorical)
    zcat "$file" | jq -r .class > "$out/$s.labels" ;;
  gauss) # gradual: the means rotate by 90° three times, over 2000 points each
    "$sl" gen gauss --n 20000 --shifts 3 --drift gradual --width 2000 --seed 1 --out "$out/gauss.libsvm"
    file=$out/gauss.libsvm; kernel=rbf:gamma=1; extra=()
    cut -d' ' -f1 "$file" > "$out/$s.labels" ;;
  sea) # abrupt: three changes of theta, 10 % label noise
    "$sl" gen sea --n 20000 --shifts 3 --seed 1 --out "$out/sea.libsvm"
    file=$out/sea.libsvm; kernel=rbf:gamma=0.1; extra=()
    cut -d' ' -f1 "$file" > "$out/$s.labels" ;;
  *) echo "unknown stream $s" >&2; exit 2 ;;
  esac
  for d in "${delays[@]}"; do
    /usr/bin/time -f "$s, delay $d: %e s" "$sl" eval --data "$file" --keep-order --seed 1 --format json --kernel "$kernel" \
      "${flags[@]}" ${extra[@]+"${extra[@]}"} --delay "$d" > "$out/$s-delay$d.json" 2> >(grep -v '^eval' >&2)
  done
done

# A markdown table per stream: a row per learner, mistake rates (%) by
# delay; then the majority baseline (eval's, over the labels in the order
# they come) and the no-change rule: predict the last label known, that of
# the record delay+1 before (over the records that have one).
pct() { printf '%.2f' "$(jq -r "$1 * 100" "$2")"; } # a rate of a JSON result, in %
for s in "${sets[@]}"; do
  echo
  echo "$s:"
  echo
  echo "| learner |$(printf " delay %s |" "${delays[@]}")"
  echo "|---|$(printf -- '---|%.0s' "${delays[@]}")"
  for i in "${!learners[@]}"; do
    line="| $(jq -r ".learners[$i].spec" "$out/$s-delay0.json") |"
    for d in "${delays[@]}"; do line+=" $(pct ".learners[$i].mistake_rate" "$out/$s-delay$d.json") |"; done
    echo "$line"
  done
  line="| majority baseline |"
  for d in "${delays[@]}"; do line+=" $(pct .learners[0].baseline_rate "$out/$s-delay$d.json") |"; done
  echo "$line"
  line="| no-change (last known label) |"
  for d in "${delays[@]}"; do
    line+=" $(awk -v d="$d" '{ y[NR] = $1 } NR > d + 1 && y[NR] != y[NR - d - 1] { e++ } END { printf "%.2f", 100 * e / (NR - d - 1) }' "$out/$s.labels") |"
  done
  echo "$line"
done
