#!/usr/bin/env bash
# The primal form against the dual (docs/architecture.md, "Primal and dual
# form"): on each data set of docs/auto.md's table, in file order, the
# Perceptron and PA-I (C = 0.01) with a linear
# kernel, played by this tree's build and by OLD, a build of a commit
# before the primal form (which keeps every linear model in dual form):
# each learner's mistakes in both, the largest difference between their
# margins (eval --trace) relative to max(1, |dual margin|), and the CPU
# (user + system) of each run.
# Usage: scripts/primal.sh OLD [a9a|banana|covtype|covtype-events|w8a|waveform|usps|pendigits|letter|mnist|elec2|adult-events|nursery ...]
#   e.g. git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/sl-old ./cmd/streamlearner)
#        scripts/primal.sh /tmp/sl-old a9a usps
# Reads ../shared/datasets (or $DATASETS); writes to out/primal (or $OUT).
set -euo pipefail
old=$(realpath "$1")
shift
cd "$(dirname "$0")/.."
. scripts/datasets.sh
out=${OUT:-out/primal}
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(a9a banana covtype w8a waveform usps pendigits letter mnist elec2 adult-events nursery covtype-events)
mkdir -p "$out"
make -s build
new=bin/streamlearner
learners=(perceptron pa1:c=0.01)
echo "| data | records | learner | mistakes, dual | mistakes, primal | largest margin difference | CPU dual (s) | CPU primal (s) |"
echo "|---|---|---|---|---|---|---|---|"
for s in "${sets[@]}"; do
  flags=()
  case $s in
  a9a) file=$data/a9a/a9a.gz ;;
  banana) file=$data/banana/banana.libsvm ;;
  covtype) file=$data/covtype/covtype_small_binary.libsvm ;;
  covtype-events) file=$data/events/covtype.jsonl.gz; flags=(--label-field Cover_Type --positive 2 --key-field id) ;;
  w8a) file=$data/w8a/w8a.gz ;;
  waveform) file=$data/waveform/waveform_ratsch_test.libsvm.gz ;;
  usps) file=$data/usps/usps.gz; flags=(--classes auto) ;;
  pendigits) file=$data/pendigits/pendigits.scale; flags=(--classes auto) ;;
  letter) file=$data/letter/letter.libsvm.gz; flags=(--classes auto --limit 5000) ;;
  mnist) file=$data/mnist/mnist.t.libsvm.gz; flags=(--classes auto --limit 3000) ;;
  elec2) file=$data/events/elec2.jsonl.gz; flags=(--label-field class --positive UP --key-field id) ;;
  adult-events) file=$data/events/adult.train.jsonl.gz; flags=(--label-field income --positive '>50K' --key-field id) ;;
  nursery) file=$data/events/nursery.jsonl.gz; flags=(--label-field class --classes auto --key-field id) ;;
  *) echo "unknown data set $s" >&2; exit 2 ;;
  esac
  for form in dual primal; do
    sl=$new
    [ $form = dual ] && sl=$old
    for l in "${learners[@]}"; do
      f=$out/$s-$form-${l%%:*}
      /usr/bin/time -f "%U %S" -o "$f.time" "$sl" eval --data "$file" --keep-order --kernel linear --learner "$l" "${flags[@]}" \
        --format json --trace "$f.trace" > "$f.json" 2>/dev/null
    done
  done
  for l in "${learners[@]}"; do
    d=$out/$s-dual-${l%%:*} p=$out/$s-primal-${l%%:*}
    n=$(jq '.learners[0].examples' "$p.json")
    md=$(jq '.learners[0] | .mistake_rate * .examples | round' "$d.json")
    mp=$(jq '.learners[0] | .mistake_rate * .examples | round' "$p.json")
    diff=$(paste "$d.trace" "$p.trace" | awk '{ a = $1 - $2; if (a < 0) a = -a; m = $1 < 0 ? -$1 : $1; if (m < 1) m = 1; if (a / m > w) w = a / m } END { printf "%.1e", w }')
    cd_=$(awk '{ printf "%.2f", $1 + $2 }' "$d.time")
    cp_=$(awk '{ printf "%.2f", $1 + $2 }' "$p.time")
    echo "| $s | $n | $l | $md | $mp | $diff | $cd_ | $cp_ |"
  done
done
