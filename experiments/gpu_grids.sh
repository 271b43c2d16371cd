#!/usr/bin/env bash
# The expensive trained grids in one go on one accelerator: the realizability study's whole
# trained side (main grid at three tiers, L0 sensitivity, RoPE frequency-scale rows, the d = 128
# scale check) and the implicit-bias transformer at its reference 8000 steps.
#
# Command: experiments/gpu_grids.sh OUTDIR [SECONDS] [extra realizability-train flags...]
#   Every job is its own process (compilation is CPU-bound, so they overlap on the host's cores
#   while the GPU runs their steps); each stops after SECONDS (default 3000). A program is
#   measured as soon as it is trained (its results.json), so whatever finished comes back;
#   rerunning resumes.
#   OUTDIR gets realizability.tgz (every program's config.json + results.json, laid out as
#   <name>/<tier>/<encoding>/ under a --ckpt-root, plus each job's --out folder), transformer.tgz
#   (the reproduce report and its results) and logs.tgz.
# Expected runtime: minutes on an H200 (measured numbers are in the closing note of issue 11).
# Use here: untar realizability.tgz into the --ckpt-root of `lgjax realizability-train`; its
#   measured programs are then skipped, and `lgjax realizability report` reads them.
set -u
OUTDIR=$(realpath "${1:?usage: gpu_grids.sh OUTDIR [SECONDS] [flags...]}")
BUDGET=${2:-3000}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=${LGJAX_GRID_ROOT:-/tmp/lgjax-grids}
PY=${PYTHON:-python3}
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p "$OUTDIR" "$ROOT/logs"

train() {  # train NAME-OF-LOG realizability-train flags...
  local log=$1; shift
  timeout "$BUDGET" "$PY" -m lgjax.harness.cli realizability-train --layout flat --resume \
    --ckpt-root "$ROOT/rz" "$@" >"$ROOT/logs/$log.log" 2>&1
}

for enc in ape nope alibi sinusoidal rope; do  # the main grid: one process per encoding
  train "main-$enc" --encodings "$enc" --out "$ROOT/out/main-$enc" "$@" &
done
for L0 in 10 40; do  # L0 sensitivity: tested at 3 L0 (L0 = 20 at 60 is the main grid's)
  train "L0-$L0" --tiers 1L1H --L0 "$L0" --test-lengths $((3 * L0)) \
    --name "realizability-L0-$L0" --out "$ROOT/out/L0-$L0" "$@" &
done
(for s in 0.3 0.1 0.03 0.01; do  # RoPE frequency scale on skip-3 (scale 1: the main grid)
  train "rope-scale-$s" --tiers 1L1H --encodings rope --tasks skip-3 --rope-scale "$s" \
    --name "realizability-rope-scale-$s" --out "$ROOT/out/rope-scale-$s" "$@"
done) &
train scale-check --vocab 64 --d 128 --seeds 2 --name realizability-scale \
  --out "$ROOT/out/scale-check" "$@" &
timeout "$BUDGET" "$PY" -m lgjax.harness.cli reproduce implicit-bias --only transformer --no-progress \
  ${LGJAX_TRANSFORMER_FLAGS:-} --ckpt-root "$ROOT/tf" --out "$ROOT/reproduce" \
  >"$ROOT/logs/transformer.log" 2>&1 &
wait

cd "$ROOT" && {
  find rz -maxdepth 4 \( -name results.json -o -name config.json \) -print0 \
    | tar -czf "$OUTDIR/realizability.tgz" --null -T - out
  tar -czf "$OUTDIR/transformer.tgz" reproduce
  tar -czf "$OUTDIR/logs.tgz" logs
}
ls -l "$OUTDIR"
for f in "$ROOT"/logs/*.log; do echo "== $f"; tail -n 3 "$f"; done
