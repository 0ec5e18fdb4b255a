#!/usr/bin/env bash
# The champion rule on drifting streams: for each stream, eval plays every
# candidate learner alone and the selection over them (one pass, file
# order), with the default rule (window 2000, margin 0.01), a short window
# (500) and the default rule with an ADWIN detector. docs/selection.md
# quotes the tables.
# Usage: scripts/selection.sh [sea|hyperplane|gauss|checkerboard|elec2|reuters ...]
# Reads Elec2 and Reuters-21578 from ../shared/datasets (or $DATASETS); writes the streams and
# JSON results to out/selection (or $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/datasets.sh
out=${OUT:-out/selection}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(sea hyperplane gauss checkerboard elec2 reuters)
mkdir -p "$out"
make -s build
sl=bin/streamlearner

# candidates A B C: four budget learners and the Perceptron on the stream's
# kernel A, and RBP on two more kernels B and C (RBF widths).
candidates() {
  echo --kernel "$1" --learner rbp:budget=100 --learner lbp:budget=100 --learner forgetron:budget=100 \
    --learner projectron++:budget=100 --learner perceptron \
    --challenger "rbp:budget=100@$2" --challenger "rbp:budget=100@$3"
}

for s in "${sets[@]}"; do
  extra=()
  case $s in
  sea) # abrupt: three changes of theta
    "$sl" gen sea --n 20000 --shifts 3 --seed 1 --out "$out/sea.libsvm"
    file=$out/sea.libsvm; cand=$(candidates rbf:gamma=0.1 rbf:gamma=1 rbf:gamma=0.01) ;;
  hyperplane) # gradual: two weights drift on every point
    "$sl" gen hyperplane --n 20000 --seed 1 --out "$out/hyperplane.libsvm"
    file=$out/hyperplane.libsvm; cand=$(candidates rbf:gamma=1 rbf:gamma=10 rbf:gamma=0.1) ;;
  gauss) # gradual: the means rotate by 90° three times, over 2000 points each
    "$sl" gen gauss --n 20000 --shifts 3 --drift gradual --width 2000 --seed 1 --out "$out/gauss.libsvm"
    file=$out/gauss.libsvm; cand=$(candidates rbf:gamma=1 rbf:gamma=10 rbf:gamma=0.1) ;;
  checkerboard) # gradual: the board rotates by 90° over the stream
    "$sl" gen checkerboard --n 20000 --drift gradual --seed 1 --out "$out/checkerboard.libsvm"
    file=$out/checkerboard.libsvm; cand=$(candidates rbf:gamma=2 rbf:gamma=20 rbf:gamma=0.2) ;;
  reuters) # real: Reuters-21578 in time order, the target topic changes 7 times (as scripts/drift.sh)
    if [ ! -s "$out/reuters.jsonl" ]; then
      go run ./scripts/reuters "$data/reuters21578/reuters21578_sgm.tar.gz" > "$out/reuters.jsonl"
    fi
    "$sl" gen chunks --data "$out/reuters.jsonl" --chunks 8 --targets acq,money-fx,crude,grain,acq,money-fx,crude,grain \
      --out "$out/reuters.libsvm"
    file=$out/reuters.libsvm; cand=$(candidates poly:degree=4,coef0=1 rbf:gamma=1 rbf:gamma=0.1) ;;
  elec2) # real: 45,312 half-hours of the NSW market, label UP/DOWN
    file=$data/events/elec2.jsonl.gz; cand=$(candidates rbf:gamma=1 rbf:gamma=10 rbf:gamma=0.1)
    # day is the weekday, nominal in elecNormNew: a category, as these tables
    # were measured (the string "2" alone would be the number 2).
    extra=(--label-field class --positive UP --ignore-field id --ignore-field date --features day:categorical) ;;
  *) echo "unknown stream $s" >&2; exit 2 ;;
  esac
  for rule in "window=2000,margin=0.01" "window=500,margin=0.01" "window=2000,margin=0.01 adwin"; do
    sel=(--select "${rule% adwin}")
    name=$s-${rule%%,*}
    if [[ $rule == *adwin ]]; then sel+=(--select-detector adwin); name+=-adwin; fi
    # shellcheck disable=SC2086 # cand is a list of flags
    /usr/bin/time -f "$name: %e s" "$sl" eval --data "$file" --keep-order --format json $cand "${extra[@]}" "${sel[@]}" \
      > "$out/$name.json" 2> >(grep -v '^eval' >&2)
  done
done

# Two markdown tables, a column per stream: every learner alone (from the
# first rule's run; each learner's row is the same in all three), then the
# best of them in hindsight and the selection under each rule, with its
# switches.
rate='(.mistake_rate * 10000 | round / 100 | tostring)'
rows=(rbp:budget=100 lbp:budget=100 forgetron:budget=100 projectron++:budget=100 perceptron "rbp:budget=100, kernel B" "rbp:budget=100, kernel C")
echo
echo "| learner |$(printf " %s |" "${sets[@]}")"
echo "|---|$(printf -- '---|%.0s' "${sets[@]}")"
for i in "${!rows[@]}"; do
  line="| ${rows[$i]} |"
  for s in "${sets[@]}"; do line+=" $(jq -r ".learners[$i] | $rate" "$out/$s-window=2000.json") |"; done
  echo "$line"
done
line="| best single in hindsight |"
for s in "${sets[@]}"; do
  line+=" $(jq -r "[.learners[] | select(.selector | not)] | min_by(.mistake_rate) | \"\(.spec): \($rate)\"" "$out/$s-window=2000.json") |"
done
echo "$line"
for rule in window=2000 window=500 window=2000-adwin; do
  line="| selection, $rule |"
  for s in "${sets[@]}"; do line+=" $(jq -r ".learners[-1] | \"\($rate) (\(.switches // 0))\"" "$out/$s-$rule.json") |"; done
  echo "$line"
done
