#!/usr/bin/env bash
# Measures eval side by side with the C++ peer, the JMLR 2016 online
# kernel learning library (LIBOL/KOL), in the same run: never against
# times written down on another day or machine.
#
# The peer is built from its public source in a scratch directory outside
# the repository (cmake, g++ and Debian's libeigen3-dev; its published
# flags, -O2 -s). KOL_REPO is a clone or mirror of github.com/LIBOL/KOL
# (default: that URL); KOL_DIR, the scratch directory, is reused when it
# holds a build. Without the peer (no source, no compiler) the script says
# so and exits 0.
#
# The data is a9a as the peer ships it (sample_dataset/a9a_train,
# uncompressed), and ×N copies of it (COPIES, default "1 10"). For each
# learner the two share, at each budget (BUDGETS, default "100 500"), the
# two processes run alternately RUNS times (default 9) doing the same work
# (one pass in file order, rbf γ = 0.01), and the report gives the medians
# of the per-pair ratios peer/ours of wall and of CPU (user + sys), and
# ours/peer CPU, whose target is ≤ 1/3 (issue 25).
#
# Usage: scripts/peer.sh               (from the repository root; builds bin/streamlearner)
#        RUNS=3 BUDGETS=100 COPIES=1 scripts/peer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-9}
budgets=${BUDGETS:-100 500}
copies=${COPIES:-1 10}
dir=${KOL_DIR:-${TMPDIR:-/tmp}/streamlearner-peer}
repo=${KOL_REPO:-https://github.com/LIBOL/KOL}

skip() {
  echo "peer.sh: $*; no side-by-side figures (the peer is LIBOL/KOL: set KOL_REPO to a clone, install cmake, g++ and libeigen3-dev)" >&2
  exit 0
}

# build: the peer's binary at $dir/build/bin/KOL.
if [ ! -x "$dir/build/bin/KOL" ]; then
  for tool in cmake g++ git; do
    command -v "$tool" >/dev/null || skip "no $tool"
  done
  eigen=/usr/include/eigen3/Eigen # the directory whose "Eigen" header the peer includes
  [ -f "$eigen/Eigen" ] || skip "no Eigen headers in $eigen (apt-get install libeigen3-dev)"
  rm -rf "$dir" && mkdir -p "$dir"
  git clone -q "$repo" "$dir/src" || skip "cannot clone $repo"
  mkdir -p "$dir/build"
  (cd "$dir/build" && cmake -DEIGEN_DIR="$eigen" ../src >cmake.log 2>&1 && make -j"$(nproc)" KOL >make.log 2>&1) ||
    skip "the peer did not build (see $dir/build/*.log)"
fi
peer=$dir/build/bin/KOL
data=$dir/src/sample_dataset/a9a_train
[ -f "$data" ] || skip "no $data in the peer's source"
echo "peer: $peer ($(git -C "$dir/src" log -1 --format='%h %cs' 2>/dev/null || echo '?'))"
make -s build
echo "ours: bin/streamlearner ($(bin/streamlearner --version))"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; $runs alternating pairs per row"

# timed CMD...: prints "wall cpu" in seconds for one run of CMD; a
# failed run stops the script with what it said.
timed() {
  local TIMEFORMAT='%R %U %S' t log=$dir/last-run.log
  if ! t=$({ time "$@" >/dev/null 2>"$log"; } 2>&1); then
    echo "peer.sh: failed: $*" >&2
    tail -3 "$log" >&2
    return 1
  fi
  awk '{printf "%.4f %.4f\n", $1, $2 + $3}' <<<"$t"
}

# median of the numbers on stdin
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '\n%-8s %-40s %10s %10s %10s %10s %12s %12s %14s\n' data learner "ours wall" "peer wall" "ours cpu" "peer cpu" "wall peer/us" "cpu peer/us" "cpu us/peer"
for n in $copies; do
  file=$data
  if [ "$n" != 1 ]; then
    file=$dir/a9a_train.x$n
    # The peer's file has no newline at its end: add one to each copy.
    [ -f "$file" ] || for _ in $(seq "$n"); do sed -e '$a\' "$data"; done >"$file"
  fi
  for b in $budgets; do
    # ours | the peer's -opt and flags: the same work.
    u=$(awk -v b="$b" 'BEGIN {printf "%.5f", 0.25 * sqrt((b + 1) / log(b + 1))}')
    for pair in "rbp:budget=$b|kernel-rbp -B $b" "forgetron:budget=$b|kernel-forgetron -B $b" \
      "projectron:eta=0,max=$b|kernel-projectron -B $b" "projectron++:eta=0,max=$b,u=$u|kernel-projectronpp -B $b"; do
      ours=${pair%%|*} theirs=${pair#*|}
      ow=() pw=() oc=() pc=() rw=() rc=()
      for _ in $(seq "$runs"); do
        t=$(timed bin/streamlearner eval --data "$file" --keep-order --learner "$ours" --kernel rbf:gamma=0.01)
        read -r w1 c1 <<<"$t"
        # shellcheck disable=SC2086 # the peer's flags are words
        t=$(timed "$peer" -i "$file" -opt $theirs -gamma 0.01)
        read -r w2 c2 <<<"$t"
        ow+=("$w1") pw+=("$w2") oc+=("$c1") pc+=("$c2")
        rw+=("$(awk -v a="$w2" -v b="$w1" 'BEGIN {print a / b}')") rc+=("$(awk -v a="$c2" -v b="$c1" 'BEGIN {print a / b}')")
      done
      m() { printf '%s\n' "$@" | median; }
      printf '%-8s %-40s %10.3f %10.3f %10.3f %10.3f %12.2f %12.2f %14.2f\n' "a9a.x$n" "$ours" "$(m "${ow[@]}")" "$(m "${pw[@]}")" \
        "$(m "${oc[@]}")" "$(m "${pc[@]}")" "$(m "${rw[@]}")" "$(m "${rc[@]}")" "$(awk -v r="$(m "${rc[@]}")" 'BEGIN {print 1 / r}')"
    done
  done
done
echo
echo "ratios are medians of the per-pair ratios (each pair: our run, then the peer's, back to back); target: cpu us/peer ≤ 0.33"
