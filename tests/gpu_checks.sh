#!/usr/bin/env bash
# Every check that needs a GPU, in one call on a machine with one (issue 26, part B):
# facts about the machine, the CUDA tests, the conformance suite (the reference declares
# `cuda`, so its CUDA rows run), and the CUDA bench cases. Results go under $OUT (or
# ./gpu-results). Needs Python with CUDA torch, pytest, pytest-timeout, hypothesis and
# msgpack; tensordict's wheels, if copied into .whl/, are installed beside it first.
#   usage: tests/gpu_checks.sh [probe|tests|suite|cudarows|fresh|bench|torchrl|all]...   (default: all; fresh and
#   torchrl only by name: torchrl needs TorchRL's wheels in .whl/, put there by tests/gpu/wheels.sh)
#   STAGE_TIMEOUT (seconds per stage, default 300) and BENCH_ARGS narrow a run; a bench cut short by
#   the timeout is interrupted (SIGINT) and still writes what it measured.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
if compgen -G ".whl/*.whl" >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/ws-site .whl/*.whl && export PYTHONPATH=/tmp/ws-site
fi
export PYTHONPATH="$PWD/reference:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
what="${*:-all}"
bench_args="${BENCH_ARGS:---sizes 1e6,1e8 --receivers 1,4 --layouts few,many --budget 0.5}"
status=0
run() { echo "==== $1 ($(date -u +%T))"; shift; "$@" || status=1; }

[[ $what == *all* || $what == *probe* ]] && run "machine" bash -c "nvidia-smi -L; $py tests/gpu/probe.py 2>&1 | tee $out/probe.txt"
[[ $what == *all* || $what == *tests* ]] && run "CUDA tests" bash -c "timeout ${STAGE_TIMEOUT:-300} $py -m pytest tests/test_cuda.py tests/test_cuda_logic.py tests/test_layout.py -m 'cuda or not cuda' -p no:cacheprovider -v -rfEs --durations=8 --timeout 120 2>&1 | tee $out/tests.txt"
[[ $what == *all* || $what == *suite* || $what == *cudarows* ]] && run "suite: the CUDA rows" bash -c "timeout ${STAGE_TIMEOUT:-300} $py -m pytest conformance/test_cuda.py --impl=weightsync -p no:cacheprovider -n 0 -v -rfEs --timeout 120 2>&1 | tee $out/suite-cuda.txt"
[[ $what == *all* || $what == *suite* ]] && run "suite: all of it" bash -c "timeout ${STAGE_TIMEOUT:-300} $py -m pytest conformance --impl=weightsync -p no:cacheprovider -q -rfEs --durations=10 --conformance-json=$out/suite.json 2>&1 | tee $out/suite.txt"
# Issue 41's measure on a GPU: the clauses that run exercised (every CUDA clause has a test; on a machine with a GPU
# the report should list none but those only a sender program or a one-role module reaches).
[[ $what == *all* || $what == *suite* ]] && run "suite: the clauses it exercised" bash -c "$py conformance/tools/clauses.py $out/suite.json 2>&1 | tee $out/clauses.txt"
# Seen twice on an H100, never on a CPU machine: in test_receivers_on_one_device_read_one_copy_of_a_version
# receiver 0's connect() got no Init in 10 s while receivers 1 and 2 connected (the re-check held). On a GPU
# the suite's CUDA tests run first in the same worker processes; this stage runs them and then that test
# in one process (-n 0), in this order, to see whether a worker that received CUDA slots is the one that hangs.
[[ $what == *fresh* ]] && run "suite: the CUDA rows, then a CPU zero-copy connect in the same workers" bash -c "timeout ${STAGE_TIMEOUT:-300} $py -m pytest --impl=weightsync -p no:cacheprovider -n 0 -v -rfEs --timeout 120 conformance/test_cuda.py conformance/test_consistency.py::test_receivers_on_one_device_read_one_copy_of_a_version 2>&1 | tee $out/fresh.txt"
[[ $what == *all* || $what == *bench* ]] && run "bench" bash -c "timeout -s INT -k 30 ${STAGE_TIMEOUT:-300} $py -m weightsync bench --devices cuda --no-network $bench_args --out /tmp/ws-bench 2>&1 | tee $out/bench.txt; cp /tmp/ws-bench/results.md /tmp/ws-bench/results.json $out/"
# Side by side with TorchRL's scheme on the GPU (issue 44): fp32 in 6 tensors at 1e7 and 1e8 params, then the
# LLM shapes (bf16, dense and experts, at 1e8 and 5e8), to 1 and 4 workers; two runs, two folders of results.
trl_systems="weightsync push zero-copy,weightsync push,weightsync push zero-copy packed,torchrl"
[[ $what == *torchrl* ]] && run "bench beside TorchRL: fp32" bash -c "timeout -s INT -k 30 ${STAGE_TIMEOUT:-300} $py -m weightsync bench --devices cuda --no-network --no-startup --systems '$trl_systems' --sizes 1e7,1e8 --layouts few --receivers 1,4 --budget 0.5 --out /tmp/ws-trl-fp32 2>&1 | tee $out/torchrl-fp32.txt; mkdir -p $out/torchrl-fp32; cp /tmp/ws-trl-fp32/results.md /tmp/ws-trl-fp32/results.json $out/torchrl-fp32/"
[[ $what == *torchrl* ]] && run "bench beside TorchRL: LLM shapes" bash -c "timeout -s INT -k 30 ${STAGE_TIMEOUT:-300} $py -m weightsync bench --devices cuda --no-network --no-startup --systems '$trl_systems' --layouts llm,moe --receivers 1,4 --budget 0.5 --out /tmp/ws-trl-llm 2>&1 | tee $out/torchrl-llm.txt; mkdir -p $out/torchrl-llm; cp /tmp/ws-trl-llm/results.md /tmp/ws-trl-llm/results.json $out/torchrl-llm/"
echo "==== done ($(date -u +%T)), status $status"
exit $status
