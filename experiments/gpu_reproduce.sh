#!/usr/bin/env bash
# `lgjax reproduce all` end to end on one accelerator, its three studies' steps in one pool of
# worker processes that share the GPU (a step's compilation, on the host's cores, overlaps the
# others' steps), from an empty checkpoint root and compilation cache: what it costs there.
#
# Command: experiments/gpu_reproduce.sh OUTDIR [SECONDS] [reproduce flags...]
#   e.g. experiments/gpu_reproduce.sh "$OUT" 500 --jobs 12 --tiers 1L1H
#   The reproduction stops after SECONDS (default 3000); what finished is kept: OUTDIR gets
#   reproduce.log (the command's stdout and stderr, each step's wall time in it), out.tgz (its
#   --out folder: the reports, every step's results.json, figures and worker logs) and
#   ck_json.tgz (the JSON files under --ckpt-root: run configs, per-program measurements).
# Runs from the repository root with the machine's own python3 and packages (PYTHON overrides).
set -u
OUTDIR=$(realpath "${1:?usage: gpu_reproduce.sh OUTDIR [SECONDS] [reproduce flags...]}")
BUDGET=${2:-3000}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=${LGJAX_REPRODUCE_ROOT:-/tmp/lgjax-reproduce}
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # the workers share the device
mkdir -p "$OUTDIR" "$ROOT"
"$PY" -c 'import jax, flax, optax, orbax.checkpoint as o, chex
print("jax", jax.__version__, "flax", flax.__version__, "optax", optax.__version__,
      "orbax", o.__version__, "chex", chex.__version__, jax.devices())'
t0=$(date +%s%N)
timeout "$BUDGET" "$PY" -m lgjax.harness.cli reproduce all --no-progress --out "$ROOT/out" \
  --ckpt-root "$ROOT/ck" "$@" >"$OUTDIR/reproduce.log" 2>&1
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "reproduce all: exit $rc after $((ms / 1000)).$(printf %03d $((ms % 1000))) s (budget $BUDGET s)"
tar -czf "$OUTDIR/out.tgz" -C "$ROOT" out 2>/dev/null
(cd "$ROOT" && find ck -name '*.json' -print0 | tar -czf "$OUTDIR/ck_json.tgz" --null -T -)
ls -l "$OUTDIR"
grep -E "^== |elapsed|claim checks|^every study|^  [a-z-]+: " "$OUTDIR/reproduce.log" | tail -n 80
