#!/bin/bash
# run3.sh NAME: 3 runs against the bug module, 3 against weightsync; prints rc of each
name=$1
export PYTHONPATH=/tmp/round
res=""
for m in $name $name $name weightsync weightsync weightsync; do
  start=$(date +%s.%N)
  timeout 120 python /tmp/round/confirm_$name.py $m > /tmp/round/scratch/last_${name}_$m.out 2>&1
  rc=$?
  el=$(python -c "print(f'{$(date +%s.%N)-$start:.1f}')")
  res="$res $m:$rc(${el}s)"
  if { [ $m = $name ] && [ $rc != 1 ]; } || { [ $m = weightsync ] && [ $rc != 0 ]; }; then
     echo "UNEXPECTED $m rc=$rc"; tail -5 /tmp/round/scratch/last_${name}_$m.out
  fi
done
echo "$name:$res"; grep -h "BUG SEEN\|^ok" scratch/last_${name}_$name.out scratch/last_${name}_weightsync.out | cut -c1-220
