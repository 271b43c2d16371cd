#!/usr/bin/env bash
# The whole realizability grid in one go on an accelerator: all three tiers, five encodings,
# every (task x seed) of one (tier, encoding) in one program with the cells in one wide vmap
# (--layout flat). Writes the same files as the CPU run: <ckpt-root>/realizability/<tier>/
# <encoding>/{config.json, checkpoints, results.json} and <out>/results.json; rerunning skips
# finished programs and continues unfinished ones, and the CPU run may continue them too.
# Usage: scripts/realizability_grid_gpu.sh [CKPT_ROOT] [OUT]
set -euo pipefail
ckpt_root="${1:-runs/realizability}"
out="${2:-$ckpt_root/results}"
python -m lgjax.cli realizability-train --layout flat --resume \
    --ckpt-root "$ckpt_root" --out "$out"
python -m lgjax.cli realizability-report "$out" --out "$out/report"
