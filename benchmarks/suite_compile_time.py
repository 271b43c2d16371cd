"""Where the test suite's time goes: how much of it JAX spends tracing, lowering and compiling.

Runs pytest (by default the suite's first pass as .ci/run runs it) with this file loaded as a
plugin in every worker. Each worker sums JAX's own duration events (jax.monitoring): tracing a
function to a jaxpr, lowering the jaxpr to an MLIR module, XLA's backend compilation, and reads
of the persistent compilation cache, and the time its tests took (setup, call and teardown).
Printed: the wall, the test time summed over workers, each event's seconds and count and its
share of that test time, then the programs whose backend compilation took longest in all, the
lines of lgjax that built them (the innermost lgjax frame on the stack when XLA compiled them,
or the tests' own code; how many were compiled and how many read from the persistent cache)
and the tests whose programs took longest to lower and compile (where a cut would pay).

Only the workers' own events are counted: the processes a test starts (the CLI run as a
command, multi-process jobs) compile too, inside their test's time but outside these sums.
Lowering and backend compilation happen once per top-level program and do not overlap; a read
of the persistent cache happens inside the backend-compilation event (JAX times the read in
place of the compilation it spares), so reads are printed apart and not added again; a function
jitted inside another is traced inside its caller's tracing, so the tracing sum may count some
time twice and is printed apart.

`--sharing` also asks what compiling each program once would spare, were tests to share their
programs: every module XLA compiles is fingerprinted three ways (its text without source
locations or names; that with every constant array blanked; that with every tensor shape and
number blanked too), and the compilations whose fingerprint an earlier compilation in any
worker had are summed. The first counts what the persistent cache could not spare (a program
compiled again under other XLA options, or by both workers at once), the second what passing
constants as arguments would spare, the third more than tests giving their runs the same sizes
could (it also merges programs that differ in the dimensions an op works on). It wraps
JAX's private `backend_compile_and_load` (the module is not passed to the public events).

    python benchmarks/suite_compile_time.py [--sharing] [PYTEST ARGS...]
        (default: -n 2 --dist load -m "not jobs and not slurm", the suite's first pass)
"""

from __future__ import annotations

import collections
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

OUT = "LGJAX_SUITE_COMPILE_DIR"  # where each worker writes its sums (set by the runner)
SHARING = "LGJAX_SUITE_COMPILE_SHARING"  # set: fingerprint every compiled module (--sharing)
FINGERPRINTS = {"text": "the same text", "constants": "the same but for constants",
                "shapes": "the same but for constants, shapes, numbers"}
EVENTS = {"jaxpr_trace_duration": "tracing to a jaxpr",
          "jaxpr_to_mlir_module_duration": "lowering to MLIR",
          "backend_compile_duration": "compilation or cache read",
          "cache_retrieval_time_sec": "(of which cache reads)"}
# the events whose seconds add up without overlap (tracing nests; reads sit inside compilation)
SUMMED = ("jaxpr_to_mlir_module_duration", "backend_compile_duration")

CACHE = {"/jax/compilation_cache/cache_misses": "compiled",
         "/jax/compilation_cache/cache_hits": "read from the cache"}

if os.environ.get(OUT):  # imported by pytest as a plugin (-p suite_compile_time)
    import jax.monitoring

    import lgjax

    _seconds: collections.Counter = collections.Counter()
    _counts: collections.Counter = collections.Counter()
    _programs: collections.Counter = collections.Counter()
    _by_test: collections.Counter = collections.Counter()
    _sites: dict = collections.defaultdict(collections.Counter)  # line -> seconds and counts
    _tests = [0.0]
    _package = Path(lgjax.__file__).parent

    def _site() -> str:
        """The innermost line of lgjax on the stack (the events fire in the compiling call)."""
        for frame in reversed(traceback.extract_stack()):
            path = Path(frame.filename)
            if path.is_relative_to(_package):
                return f"lgjax/{path.relative_to(_package)}:{frame.lineno}"
        return "(the tests' own code)"

    def _on_event(event: str, **_) -> None:
        if event in CACHE:
            _sites[_site()][CACHE[event]] += 1

    def _on_duration(event: str, duration: float, fun_name: str | None = None, **_) -> None:
        name = event.rsplit("/", 1)[-1]
        if name in EVENTS:
            _seconds[name] += duration
            _counts[name] += 1
            if name == "backend_compile_duration":
                _programs[str(fun_name)] += duration
                _sites[_site()]["seconds"] += duration
            if name in SUMMED:
                test = os.environ.get("PYTEST_CURRENT_TEST", "(outside a test)")
                _by_test[test.rsplit(" (", 1)[0]] += duration

    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    jax.monitoring.register_event_listener(_on_event)

    _compiled: list = []  # (seconds, {fingerprint kind: digest}) per XLA compilation (--sharing)

    def _fingerprints(module) -> dict:
        # the module without source locations, names as one, every constant printed whole (an
        # elided one would hide a difference)
        text = re.sub(r"@[\w.$-]+", "@f", module.operation.get_asm(enable_debug_info=False))
        constants = re.sub(r"dense(_resource)?<[^>]*>", "c", text)
        # every number too: the sizes that follow from the shapes (slices, broadcasts, padding)
        # but also the dimensions an op works on, so this row is an upper bound
        shapes = re.sub(r"tensor<[0-9x?]*|\b\d+(\.\d+)?(e[-+]?\d+)?\b", "n", constants)
        return {kind: hashlib.sha1(t.encode()).hexdigest()
                for kind, t in zip(FINGERPRINTS, (text, constants, shapes))}

    if os.environ.get(SHARING):
        from jax._src import compiler

        _compile = compiler.backend_compile_and_load

        def _fingerprinted_compile(backend, module, *args, **kwargs):
            marks = _fingerprints(module)  # (reads of the persistent cache never get here)
            t0 = time.perf_counter()
            try:
                return _compile(backend, module, *args, **kwargs)
            finally:
                _compiled.append((time.perf_counter() - t0, marks))

        compiler.backend_compile_and_load = _fingerprinted_compile

    def pytest_runtest_logreport(report) -> None:
        _tests[0] += report.duration

    def pytest_unconfigure(config) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(os.environ[OUT], f"{worker}.json").write_text(json.dumps(
            {"seconds": _seconds, "counts": _counts, "programs": _programs,
             "by_test": _by_test, "sites": _sites, "tests": _tests[0],
             "compiled": _compiled}))


def print_sharing(compiled: list) -> None:
    """What the compilations whose fingerprint an earlier one had took (--sharing)."""
    total = sum(seconds for seconds, _ in compiled)
    print(f"sharing: {len(compiled)} programs compiled by XLA in {total:.1f} s; compiled "
          "again after a program that was")
    for kind, what in FINGERPRINTS.items():
        seen, again, spent = set(), 0, 0.0
        for seconds, marks in compiled:
            if marks[kind] in seen:
                again, spent = again + 1, spent + seconds
            seen.add(marks[kind])
        print(f"  {what:45s} {again:5d} programs {spent:7.1f} s "
              f"({100 * spent / max(total, 1e-9):4.1f}%), {len(seen)} distinct")


def main(args: list[str]) -> None:
    sharing = "--sharing" in args
    args = [a for a in args if a != "--sharing"] or [
        "-n", "2", "--dist", "load", "-m", "not jobs and not slurm"]
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, OUT: out, **({SHARING: "1"} if sharing else {}),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                           os.environ.get("PYTHONPATH")]))}
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-p", Path(__file__).stem, *args], cwd=root, env=env).returncode
        wall = time.perf_counter() - t0
        files = glob.glob(f"{out}/gw*.json") or glob.glob(f"{out}/main.json")
        sums = [json.loads(Path(f).read_text()) for f in files]
    seconds, counts = collections.Counter(), collections.Counter()
    programs, by_test = collections.Counter(), collections.Counter()
    sites = collections.defaultdict(collections.Counter)
    for s in sums:
        seconds.update(s["seconds"])
        counts.update(s["counts"])
        programs.update(s["programs"])
        by_test.update(s["by_test"])
        for site, sums_of_site in s["sites"].items():
            sites[site].update(sums_of_site)
    tests = sum(s["tests"] for s in sums)
    print(f"\npytest exit {rc}; wall {wall:.1f} s; test time summed over {len(sums)} "
          f"worker(s): {tests:.1f} s")
    for name, what in EVENTS.items():
        print(f"  {what:26s} {seconds[name]:8.1f} s  {counts[name]:6d} events  "
              f"{100 * seconds[name] / max(tests, 1e-9):5.1f}% of the test time")
    compiling = sum(seconds[n] for n in SUMMED)
    print(f"  {'lowering and compiling':26s} {compiling:8.1f} s  "
          f"{100 * compiling / max(tests, 1e-9):5.1f}% of the test time")
    print("programs by backend compilation (cache reads included), summed over their "
          "compilations:")
    for name, s in programs.most_common(10):
        print(f"  {s:8.1f} s  {name}")
    print("lines of lgjax that built them, by backend compilation (programs compiled / read "
          "from the persistent cache):")
    for site, c in sorted(sites.items(), key=lambda kv: -kv[1]["seconds"])[:10]:
        print(f"  {c['seconds']:8.1f} s  {c['compiled']:5d} / {c['read from the cache']:5d}  "
              f"{site}")
    print("tests by lowering and compiling (cache reads included) of their programs:")
    for name, s in by_test.most_common(15):
        print(f"  {s:8.1f} s  {name}")
    if sharing:
        # each fingerprint's first compilation (worker after worker) counts as needed
        print_sharing([c for s in sums for c in s["compiled"]])


if __name__ == "__main__":
    main(sys.argv[1:])
