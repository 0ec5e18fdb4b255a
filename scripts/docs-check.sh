#!/usr/bin/env bash
# Runs the commands of the README and the docs, as written, in a fresh
# clone of the committed tree, so that they cannot go stale.
#
# Every ```sh block of README.md and docs/{eval,deploy,sop,drift,events,delayed,selection,auto}.md runs, in
# document order, in one clone (a block may use what an earlier one built),
# under bash -e -o pipefail with a time limit; jobs a block starts with &
# are stopped when it ends. An HTML comment right before a block adjusts
# it, where the doc says so:
#   <!-- docs-check: skip (why) -->              not run (needs Docker, the full data sets...)
#   <!-- docs-check: replace "OLD" "NEW" -->     small data or short runs, e.g. "--n 50000" "--n 6000"
#   <!-- docs-check: expect "REGEX" -->          some line of the block's output (stdout and stderr)
#                                                matches REGEX (grep -E)
#   <!-- docs-check: expect "REGEX" N LO HI -->  the first line matching REGEX has, as its N-th
#                                                blank-separated field (a number; a trailing % is
#                                                dropped), a value in [LO, HI]
# A block that exits 0 but prints a wrong answer (0.00 % mistakes, support
# 0, fewer predictions than records) must fail, so every block whose
# output says how well something worked states what it should say.
# The ports the docs use, 9092 (broker), 19392 (drift broker), 18081
# (schema registry) and 9464
# (metrics), are replaced by free ones so that the check can run beside a
# developer's own broker.
#
# docs/performance.md and docs/reproduction*.md are not run here: they run
# the full data sets for minutes to hours (`make bench`, `make reproduce`);
# docs/history/ records what was run then.
#
# Usage: scripts/docs-check.sh [FILE.md ...]   (default: the nine above)
# DOCS_CHECK_LOGS=DIR keeps each block's output; DOCS_CHECK_TIMEOUT is the
# limit per block in seconds (default 300).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(README.md docs/eval.md docs/deploy.md docs/sop.md docs/drift.md docs/events.md docs/delayed.md docs/selection.md docs/auto.md)
limit=${DOCS_CHECK_TIMEOUT:-300}
logs=${DOCS_CHECK_LOGS:-}   # keep each block's output there

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -z "$logs" ] || mkdir -p "$logs"
git clone -q "$repo" "$work/clone"
clone=$work/clone
# The docs run bin/streamlearner from the repository root, as `make build`
# leaves it; built once here so that any one doc can be checked alone.
(cd "$clone" && make -s build >/dev/null)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)); }

# extract FILE: writes $work/blocks/N.sh and N.directives for each sh block.
extract() {
  rm -rf "$work/blocks" && mkdir -p "$work/blocks"
  awk -v dir="$work/blocks" '
    /^<!-- docs-check:/ { d = d $0 "\n"; next }
    /^```sh[[:space:]]*$/ && !inside { inside = 1; n++; printf "%s", d > (dir "/" n ".directives"); close(dir "/" n ".directives"); d = ""; body = ""; next }
    /^```[[:space:]]*$/ && inside { inside = 0; printf "%s", body > (dir "/" n ".sh"); close(dir "/" n ".sh"); next }
    inside { body = body $0 "\n"; next }
    /^[[:space:]]*$/ { next }
    { d = "" }
  ' "$1"
}

# expectations DIRECTIVES LOG: checks each expect directive against the
# block's output; prints what is wrong and fails on the first miss.
expectations() {
  local line re n lo hi hit v
  while IFS= read -r line; do
    if [[ $line =~ docs-check:\ expect\ \"([^\"]*)\"\ ([0-9]+)\ ([-0-9.e]+)\ ([-0-9.e]+)\ *--\> ]]; then
      re=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} lo=${BASH_REMATCH[3]} hi=${BASH_REMATCH[4]}
      hit=$(grep -E -m 1 -- "$re" "$2") || { echo "no line matches /$re/"; return 1; }
      v=$(awk -v n="$n" '{ v = $n; sub(/%$/, "", v); print v }' <<< "$hit")
      awk -v v="$v" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(v ~ /^[-+]?[0-9.]+(e[-+]?[0-9]+)?$/ && v + 0 >= lo + 0 && v + 0 <= hi + 0) }' ||
        { echo "field $n of /$re/ is '$v', not in [$lo, $hi]: $hit"; return 1; }
    elif [[ $line =~ docs-check:\ expect\ \"([^\"]*)\"\ *--\> ]]; then
      re=${BASH_REMATCH[1]}
      grep -E -q -- "$re" "$2" || { echo "no line matches /$re/"; return 1; }
    elif [[ $line =~ docs-check:\ expect ]]; then
      echo "malformed directive: $line"; return 1
    fi
  done <<< "$1"
}

failed=0
for f in "${files[@]}"; do
  [ -f "$clone/$f" ] || { echo "docs-check: $f: not in the committed tree" >&2; failed=1; continue; }
  extract "$clone/$f"
  for sh in $(ls "$work/blocks"/*.sh 2>/dev/null | sort -V); do
    n=$(basename "$sh" .sh)
    directives=$(cat "$work/blocks/$n.directives")
    text=$(cat "$sh")
    first=$(head -n 1 "$sh")
    if grep -q 'docs-check: skip' <<< "$directives"; then
      echo "== $f block $n: skipped $(sed -n 's/.*docs-check: skip \(.*\) -->.*/\1/p' <<< "$directives")"
      continue
    fi
    while IFS= read -r line; do
      if [[ $line =~ docs-check:\ replace\ \"([^\"]*)\"\ \"([^\"]*)\" ]]; then
        old=${BASH_REMATCH[1]} new=${BASH_REMATCH[2]}
        [[ $text == *"$old"* ]] || { echo "docs-check: $f block $n: nothing to replace: $old" >&2; failed=1; }
        text=${text//"$old"/"$new"}
      fi
    done <<< "$directives"
    broker=$(free_port) drift=$(free_port) metrics=$(free_port) registry=$(free_port)
    text=${text//9092/$broker}
    text=${text//19392/$drift}
    text=${text//9464/$metrics}
    text=${text//18081/$registry}
    echo "== $f block $n: $first"
    log=${logs:-$work}/$(tr / _ <<< "$f")-$n.log
    start=$SECONDS
    if (cd "$clone" && STREAMLEARNER_RUN_METRICS_ADDR=127.0.0.1:$metrics timeout "$limit" bash -e -o pipefail -c \
        'trap '\''kill $(jobs -p) 2>/dev/null || true; wait'\'' EXIT
'"$text") > "$log" 2>&1; then
      if wrong=$(expectations "$directives" "$log"); then
        echo "   ok ($((SECONDS - start)) s)"
      else
        echo "   WRONG OUTPUT ($((SECONDS - start)) s): $wrong" >&2
        echo "   its output (last 30 lines):" >&2
        tail -n 30 "$log" | sed 's/^/   > /' >&2
        failed=1
      fi
    else
      echo "   FAILED ($((SECONDS - start)) s); the block as run:" >&2
      sed 's/^/   | /' <<< "$text" >&2
      echo "   its output (last 30 lines):" >&2
      tail -n 30 "$log" | sed 's/^/   > /' >&2
      failed=1
    fi
  done
done
exit $failed
