#!/bin/bash
# run3.sh NAME: 3 runs of confirm_NAME.py against the bug module NAME, 3 against weightsync; prints each exit code.
mkdir -p /tmp/round-scratch
# Expected: 1 (BUG SEEN) for the bug, 0 (ok) for weightsync.
name=$1
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
export PYTHONPATH=$here:$(cd "$here/../../.." && pwd)/reference
res=""
for m in $name $name $name weightsync weightsync weightsync; do
  start=$(date +%s.%N)
  timeout 120 python $here/confirm_$name.py $m > /tmp/round-scratch/last_${name}_$m.out 2>&1
  rc=$?
  el=$(python -c "print(f'{$(date +%s.%N)-$start:.1f}')")
  res="$res $m:$rc(${el}s)"
  if { [ $m = $name ] && [ $rc != 1 ]; } || { [ $m = weightsync ] && [ $rc != 0 ]; }; then
     echo "UNEXPECTED $m rc=$rc"; tail -5 /tmp/round-scratch/last_${name}_$m.out
  fi
done
echo "$name:$res"; grep -h "BUG SEEN\|^ok" /tmp/round-scratch/last_${name}_$name.out /tmp/round-scratch/last_${name}_weightsync.out | cut -c1-220
