#!/usr/bin/env bash
# Fills .whl/ (ignored by git) with what tests/gpu_checks.sh installs beside the GPU machine's own torch,
# which has no network: tensordict and pyvers from ../shared/wheels, and TorchRL 0.14.1 with the two
# pure-Python packages it needs that such a machine lacks, built for its Python (3.12 unless PYVER says
# otherwise). Run it here, where pip can download, then name .whl in the device call's `carry`.
# They are installed with --no-deps into a folder of their own, so the machine's torch is never replaced.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
cp ../shared/wheels/*.whl .whl/ 2>/dev/null || echo "no ../shared/wheels here: tensordict and pyvers left out"
pip download --quiet --no-deps --only-binary=:all: --python-version "${PYVER:-3.12}" \
    --platform manylinux_2_28_x86_64 -d .whl torchrl==0.14.1 cloudpickle hoptorch
ls -la .whl
