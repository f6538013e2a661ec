#!/usr/bin/env bash
# Mutation score of the conformance suite, measured with cosmic-ray 8.x.
#
#   bash conformance/mutation/run.sh            # from a clone of the repository
#
# It mutates a private worktree of REV (never this tree): cosmic-ray rewrites the
# source files on disk, and the suite's worker processes import the package fresh,
# so PYTHONPATH puts the worktree's weightsync in front of any installed one.
# Steps: worktree -> init -> CUDA-line filter + seeded sample -> baseline -> exec -> report.
# Environment: REV (default the revision the line ranges in cosmic-ray.toml were
# written for), MUT_DIR (worktree, default /tmp/mut), WORK (session files, default
# /tmp/weightsync-mutation), NICE (default 10), OUT (reports, default tools/mutation/1.1).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(git -C "$HERE" rev-parse --show-toplevel)"
REV="${REV:-eb7f267}"
MUT_DIR="${MUT_DIR:-/tmp/mut}"
WORK="${WORK:-/tmp/weightsync-mutation}"
NICE="${NICE:-10}"
CONFIG="$HERE/cosmic-ray.toml"
OUT="${OUT:-$REPO/tools/mutation/1.1}"
SESSION="$WORK/session.sqlite"

python -c 'import cosmic_ray' 2>/dev/null || pip install 'cosmic-ray==8.7.0'

# 1. A private copy to mutate.
if [ ! -e "$MUT_DIR" ]; then
    git -C "$REPO" worktree add --detach "$MUT_DIR" "$REV"
fi
[ -z "$(git -C "$MUT_DIR" status --porcelain)" ] || { echo "$MUT_DIR has local changes (a mutant left behind?)" >&2; exit 1; }
export PYTHONPATH="$MUT_DIR/reference:$MUT_DIR"
export PYTHONDONTWRITEBYTECODE=1
find "$MUT_DIR/reference" -name __pycache__ -prune -exec rm -rf {} +
got="$(cd "$MUT_DIR" && python -c 'import weightsync; print(weightsync.__file__)')"
[ "$got" = "$MUT_DIR/reference/weightsync/__init__.py" ] || { echo "weightsync resolves to $got, not the copy" >&2; exit 1; }
echo "mutating $MUT_DIR at $(git -C "$MUT_DIR" rev-parse --short HEAD); weightsync = $got"

mkdir -p "$WORK"
cd "$MUT_DIR"   # the config's module paths and test command are relative to the copy

# 2. Every mutant the tool generates, then the CUDA-only filter and the seeded sample.
cosmic-ray init --force "$CONFIG" "$SESSION"
python "$HERE/sample.py" "$CONFIG" "$SESSION" --listing "$WORK/sample.json"

# 3. The unmutated suite must pass first.
start=$(date +%s)
nice -n "$NICE" cosmic-ray baseline "$CONFIG" --session-file "$WORK/baseline.sqlite"
echo "baseline passed in $(( $(date +%s) - start )) s"

# 4. The sampled mutants, one at a time.
start=$(date +%s)
nice -n "$NICE" cosmic-ray exec "$CONFIG" "$SESSION"
echo "exec took $(( $(date +%s) - start )) s" | tee "$WORK/exec-time.txt"
[ -z "$(git -C "$MUT_DIR" status --porcelain)" ] || { echo "a mutant was left in $MUT_DIR" >&2; exit 1; }

# 5. Reports (out of conformance/: the suite ships without them).
mkdir -p "$OUT"
cr-report --show-diff "$SESSION" > "$WORK/cr-report.txt"   # every work item, skipped ones too (1 MB): not kept
cr-report --surviving-only --show-diff "$SESSION" > "$OUT/cr-report-survivors.txt"
cosmic-ray dump "$SESSION" > "$WORK/dump.jsonl"
cp "$WORK/sample.json" "$OUT/sample.json"
python "$HERE/summarize.py" "$SESSION" --sample "$WORK/sample.json" --exec-time "$WORK/exec-time.txt" \
    --classes "$OUT/classifications.json" --out "$OUT/results.json" --table "$OUT/survivors-table.md"
