#!/usr/bin/env bash
# `lgjax reproduce all` at the published scale on a CPU, one segment at a time: 5.1 hours
# on a 2-core machine, longer than a session, so each call resumes what the last one left
# (finished steps are reused, a grid program or contract cell resumes from its checkpoints).
#
# Command: experiments/cpu_reproduce.sh DIR [reproduce flags...]   (from the repository root)
#   DIR gets reproduce/ (--out), checkpoints/ (--ckpt-root), jax_cache/ (the compilation
#   cache), reproduce.log (every segment's stdout and stderr, appended) and segments.txt: one
#   line per segment, its start, the last minute it was seen alive and, when it ended on its
#   own, its exit code and wall time. A segment killed from outside (a session's end) keeps its
#   last "alive" time: the end-to-end wall is the sum of the segments' walls (printed at the
#   end of each segment), and the report's "cost across processes" the seconds the run
#   directories record.
# Runs the checkout's own code with .venv/bin/python (PYTHON overrides; STUDY=implicit-bias, say,
# reproduces one study)
set -u
DIR=$(realpath "${1:?usage: cpu_reproduce.sh DIR [reproduce flags...]}")
shift
PY=${PYTHON:-.venv/bin/python}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 LGJAX_CACHE=$DIR/jax_cache
mkdir -p "$DIR"
start=$(date +%s)
line() { echo "segment $(date -u -d "@$start" +%FT%TZ) $(git rev-parse --short HEAD) $*"; }
line "started" >>"$DIR/segments.txt"
"$PY" -m lgjax.harness.cli reproduce "${STUDY:-all}" --no-progress --resume --out "$DIR/reproduce" \
  --ckpt-root "$DIR/checkpoints" "$@" >>"$DIR/reproduce.log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do  # the last line: how long it has run so far
  timeout 60 tail --pid="$pid" -f /dev/null  # a minute, or less when it ends
  sed -i '$d' "$DIR/segments.txt"
  line "alive $(( $(date +%s) - start )) s" >>"$DIR/segments.txt"
done
wait "$pid"
rc=$?
sed -i '$d' "$DIR/segments.txt"
line "exit $rc after $(( $(date +%s) - start )) s" >>"$DIR/segments.txt"
grep -E "claim checks|^every study|^  [a-z-]+: |cost across|elapsed|wall seconds" \
  "$DIR/reproduce.log" | tail -n 30
# every segment's wall is the number before its closing "s" (a segment killed in its first
# minute still reads "started", and has none): their sum is the run's wall so far
awk '{n++} $NF == "s" {s += $(NF-1)} END {printf "end to end so far: %d s in %d segments\n", s, n}' \
  "$DIR/segments.txt"
exit "$rc"
