#!/bin/bash
# Every lgjax command at a small size, for before/after comparisons of a refactor: run it on two
# trees, then `python benchmarks/compare_results.py OUT_BEFORE OUT_AFTER` (every results.json and
# report.json value by value, timings and paths ignored).
# Command: benchmarks/every_command.sh TREE OUT   (TREE: a checkout, e.g. a `git worktree add`)
# Runtime here: ~4-6 min (reproduce --quick trains; the rest is small).
set -u
T=$(realpath "$1"); O=$(realpath -m "$2"); rm -rf "$O"; mkdir -p "$O"
PY=${PYTHON:-python3}
cd "$T"; export PYTHONPATH=$T  # this tree's lgjax, whatever is installed
M=lgjax; [ -f lgjax/__main__.py ] || M=lgjax.cli  # trees from before the harness/ package
run() { echo "== $*" >> "$O/log"; "$PY" -m $M "$@" >> "$O/log" 2>&1; echo "rc=$? $*" >> "$O/rcs"; }
run reproduce implicit-bias --quick --out "$O/repro" --ckpt-root "$O/ck" --no-progress
run dynamics "$O/ck/quick/multiseed-K1/rope" --out "$O/dyn" --lengths 8,12
run realizability-alpha --out "$O/alpha" --steps 200 --sweep-nums 4 --sweep-bases 10000 \
  --sweep-scales 1.0 --lbfgs-iters 200
run realizability-train --tiers 1L1H --encodings rope,ape --tasks prev,first,copy --seeds 2 \
  --steps 30 --chunk 10 --ckpt-every 10 --eval-sequences 16 --ckpt-root "$O/rck" \
  --out "$O/rtrain" --no-progress
run realizability-report "$O/rtrain/results.json" --alpha "$O/alpha/results.json" \
  --out "$O/rreport" --resamples 50
run contract-lab --out "$O/lab"
run contract-train --tasks offset_copy,absolute_anchor --schemes rope,ape --seeds 2 --steps 20 \
  --eval-sequences 8 --ckpt-root "$O/cck" --out "$O/ctrain" --no-progress
run contract-report "$O/ctrain" --out "$O/creport"
cat "$O/rcs"
