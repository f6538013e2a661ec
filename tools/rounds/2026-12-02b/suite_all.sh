#!/bin/bash
# suite_all.sh NAME...: the suite's first run (-x, default options) against each bug of this round, one line each
# in /tmp/round-suite/results.txt; run from anywhere.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p /tmp/round-suite
for name in "$@"; do
  start=$(date +%s)
  PYTHONPATH=$here:$root/reference:$root timeout 900 python -m pytest "$root/conformance" --impl=$name -p no:cacheprovider -q -x \
     --rootdir="$root" -c "$root/pyproject.toml" > /tmp/round-suite/$name.out 2>&1
  rc=$?
  line=$(grep -h "^requirements violated:" /tmp/round-suite/$name.out | head -1)
  fail=$(grep -h "^FAILED" /tmp/round-suite/$name.out | head -1 | cut -c1-160)
  echo "$name rc=$rc $(( $(date +%s) - start ))s | $line | $fail" >> /tmp/round-suite/results.txt
done
