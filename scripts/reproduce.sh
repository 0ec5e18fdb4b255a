#!/usr/bin/env bash
# Reproduces the papers' tables with `streamlearner eval` on ../shared/datasets
# (or $DATASETS). Usage: scripts/reproduce.sh [projectron|tightest|all|prepare] [OUTDIR]
# (prepare: build and prepare the data splits only).
# Each table's commands and raw outputs land in OUTDIR (default out/reproduction);
# docs/reproduction.md and docs/reproduction-tightest.md quote them beside the
# papers' numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${2:-out/reproduction}
. scripts/datasets.sh
jobs=${JOBS:-2}
mkdir -p "$out" "$out/data"
make -s build
sl=bin/streamlearner

run() { # name, then eval arguments
  local name=$1; shift
  echo "\$ streamlearner eval $*" | tee "$out/$name.txt"
  "$sl" eval --jobs "$jobs" "$@" | tee -a "$out/$name.txt"
}

# Deterministic splits of files that come without one (documented in docs/reproduction.md).
split() { # source, train lines, test lines, name: first lines train, last lines test
  local src=$1 ntr=$2 nte=$3 name=$4 tmp
  [ -s "$d/$name.train" ] && [ -s "$d/$name.test" ] && return
  tmp=$(mktemp)
  gzip -dcf "$src" > "$tmp"
  head -n "$ntr" "$tmp" > "$d/$name.train"
  tail -n "$nte" "$tmp" > "$d/$name.test"
  rm -f "$tmp"
}
prepare() {
  split "$data/banana/banana.libsvm" 4300 1000 banana
  split "$data/covtype/covtype_small_binary.libsvm" 5000 5000 covtype
  split "$data/letter/letter.libsvm.gz" 16000 4000 letter
  split "$data/mnist/mnist.t.libsvm.gz" 8000 2000 mnist
  [ -s "$d/gauss.train" ] || "$sl" gen gauss --n 10000 --noise 0.1 --seed 1 -o "$d/gauss.train"
  [ -s "$d/ncheckerboard.test" ] || { "$sl" gen checkerboard --n 10000 --noise 0.15 --seed 1 -o "$d/ncheckerboard.train"; "$sl" gen checkerboard --n 5000 --noise 0 --seed 2 -o "$d/ncheckerboard.test"; }
}
d=$out/data
prepare

if [ "$what" = projectron ] || [ "$what" = all ]; then
  # Projectron paper (Orabona et al. 2008), Tables 1 and 3: cumulative online
  # mistakes over 5 random orders; Gaussian kernel with sigma2 (gamma = 1/(2 sigma2)).
  for b in 1000 500; do
    run projectron-synthetic-B$b --data "$d/gauss.train" --kernel rbf:sigma2=0.5 --orders 5 \
      --learner perceptron --learner pa1:c=1 --learner forgetron:budget=$b --learner rbp:budget=$b --learner stoptron:budget=$b \
      --learner projectron:budget=$b --learner projectron++:budget=$b
  done
  for b in 1500 3000; do
    run projectron-a9a-B$b --data "$data/a9a/a9a.gz" --kernel rbf:sigma2=25 --orders 5 \
      --learner perceptron --learner pa1:c=1 --learner forgetron:budget=$b --learner rbp:budget=$b --learner stoptron:budget=$b \
      --learner projectron:budget=$b --learner projectron++:budget=$b
  done
fi

if [ "$what" = tightest ] || [ "$what" = all ]; then
  # Tightest paper (Wang & Vucetic), Table 2: test accuracy after one pass,
  # 10 random orders, features standardized, k = exp(-|x-y|^2 / (2 delta^2)).
  tight() { # name sigma2 train test [label args...]
    local name=$1 s2=$2 tr=$3 te=$4; shift 4
    local ls=(--learner perceptron)
    for b in 20 100 500; do ls+=(--learner stoptron:budget=$b --learner forgetron:budget=$b --learner rbp:budget=$b --learner tighter0:budget=$b --learner tightest:budget=$b); done
    run "tightest-$name" --data "$tr" --test "$te" --standardize --kernel "rbf:sigma2=$s2" --orders 10 "${ls[@]}" "$@"
  }
  tight adult9 25 "$data/a9a/a9a.gz" "$data/a9a/a9a.t.gz"
  tight banana 0.1 "$d/banana.train" "$d/banana.test"
  tight ncheckerboard 0.1 "$d/ncheckerboard.train" "$d/ncheckerboard.test"
  tight covertype 27 "$d/covtype.train" "$d/covtype.test"
  tight letter 1 "$d/letter.train" "$d/letter.test" --positive 14,15,16,17,18,19,20,21,22,23,24,25,26
  tight mnist3v8 392 "$d/mnist.train" "$d/mnist.test" --positive 3 --negative 8
  # LIBSVM's pendigits labels are digit+1: digits 3,6,8,9,0 are labels 4,7,9,10,1.
  tight pendigits 8 "$data/pendigits/pendigits.scale" "$data/pendigits/pendigits.scale.t" --positive 4,7,9,10,1
  tight usps 128 "$data/usps/usps.gz" "$data/usps/usps.t.gz" --positive 3,6,8,9,0
  tight waveform 3.17 "$data/waveform/waveform_ratsch_train.libsvm" "$data/waveform/waveform_ratsch_test.libsvm.gz"
fi
