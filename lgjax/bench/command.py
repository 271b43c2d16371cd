"""`lgjax bench`: seed-steps per second of the reference step, by seed strategy, and against
training the seeds one after another and a PyTorch eager reference; the realizability grid's
1L1H cell-step against the matmul peak; the Table-1 workload end to end, its fixed costs apart;
the fp32 matmul rate of this machine. Prints one table and writes bench.json.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jaxlib

from lgjax import models, tasks, train, transformer
from lgjax.config import ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.harness.ranges import option

REPEATS = 3


def reference_config(encoding: str, seeds: tuple[int, ...] = (0,)) -> RunConfig:
    """One head, d = 64, m = 20, batch 256, lengths [8, 16], Adam (the spec's reference)."""
    return RunConfig(TaskConfig(), ModelConfig(encoding=encoding),
                     TrainConfig(batch=256, seeds=seeds))


def _timed(fn, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0, out


def _best_of(runner, states, steps: int, repeats: int = REPEATS) -> float:
    """Least wall time of `repeats` identical chunks (the machine's noise only adds time)."""
    return min(_timed(runner, states, jnp.int32(steps))[0] for _ in range(repeats))


def time_multiseed(encoding: str, seeds: int, steps: int, strategy: str) -> dict:
    cfg = reference_config(encoding, tuple(range(seeds)))
    runner = train.make_chunk_runner(cfg, strategy=strategy)
    states = train.init_states(cfg)
    compile_s, (states, _) = _timed(runner, states, jnp.int32(1))
    _timed(runner, states, jnp.int32(5))
    run_s = _best_of(runner, states, steps)
    return {"encoding": encoding, "seeds": seeds, "strategy": strategy,
            "path": models.head_path(cfg.model), "compile_s": compile_s,
            "ms_per_seed_step": 1e3 * run_s / (steps * seeds)}


def breakdown(encoding: str, reps: int = 300) -> dict:
    """Where one seed-step's time goes: each piece jitted alone, best of 3 x `reps` calls."""
    cfg = reference_config(encoding)
    t = cfg.train
    apply = models.make_apply(cfg)
    params = models.init_params(jax.random.key(0), cfg)
    key = jax.random.key(1)
    sample = jax.jit(lambda k: tasks.sample_batch(cfg.task, k, t.batch, t.lmin, t.lmax, t.lmax))
    batch = sample(key)
    loss = jax.jit(lambda p, b: train.loss_fn(p, b, apply))
    grad = jax.jit(jax.grad(lambda p, b: train.loss_fn(p, b, apply)))
    opt = train.make_optimizer(t)
    opt_state = opt.init(params)
    update = jax.jit(lambda g, s, p: opt.update(g, s, p))
    grads = grad(params, batch)
    noop = jax.jit(lambda k: k)

    def per_call(fn, *args):
        def calls():
            for _ in range(reps):
                out = fn(*args)
            return out

        jax.block_until_ready(fn(*args))  # warm up
        return 1e3 * min(_timed(calls)[0] for _ in range(3)) / reps

    return {"dispatch (empty jit call)": per_call(noop, key),
            "sample batch": per_call(sample, key),
            # the same draw under JAX's other PRNG implementations: would one make the step
            # cheaper?
            **{f"sample batch ({impl})": per_call(sample, jax.random.key(1, impl=impl))
               for impl in ("rbg", "unsafe_rbg")},
            "loss forward": per_call(loss, params, batch),
            "loss gradient": per_call(grad, params, batch),
            "Adam update": per_call(update, grads, opt_state, params)}


def time_sequential(encoding: str, seeds: int, steps: int) -> dict:
    """The same seeds trained one after another with the one-seed program."""
    total = 0.0
    runner = None
    for s in range(seeds):
        cfg = reference_config(encoding, (s,))
        runner = runner or train.make_chunk_runner(cfg, strategy="map")
        states = train.init_states(cfg)
        _timed(runner, states, jnp.int32(5))
        total += _best_of(runner, states, steps)
    return {"encoding": encoding, "seeds": seeds, "strategy": "sequential",
            "ms_per_seed_step": 1e3 * total / (steps * seeds)}


BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"  # a checkout's benchmarks/


def time_torch(encoding: str, steps: int) -> dict | str:
    """The PyTorch row, or why there is none."""
    if not (BENCHMARKS / "torch_reference.py").is_file():
        return f"{BENCHMARKS / 'torch_reference.py'} not found (run from a checkout of lgjax)"
    sys.path.insert(0, str(BENCHMARKS))
    import torch_reference

    if not torch_reference.available():
        return "torch is not installed (pip install '.[bench]')"
    ms = torch_reference.time_steps(encoding, steps=max(20, steps // 4),
                                    threads=os.cpu_count())
    return {"encoding": encoding, "seeds": 1, "strategy": "torch-eager", "ms_per_seed_step": ms,
            "torch": torch_reference.torch_version()}


def matmul_peak() -> dict:
    """Best fp32 matmul rate in GFLOP/s over n = 1024, 2048, 4096 (2 FLOP per multiply-add)."""
    rates = {}
    for n in (1024, 2048, 4096):
        a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
        f = jax.jit(lambda x: x @ x)
        _timed(f, a)
        reps = max(1, int(2e10 // (2 * n**3)))
        t = min(_timed(f, a)[0] for _ in range(reps))
        rates[n] = 2 * n**3 / t / 1e9
    return rates


def time_transformer(steps: int = 10) -> dict:
    """The spec's transformer step: 2 layers, 4 heads, d = 192, MLP 4d, batch 256, length 16."""
    cfg = RunConfig(TaskConfig.of("shift", offset=3),
                    ModelConfig(encoding="rope", arch="transformer", layers=2, heads=4, d=192,
                                query="all"),
                    TrainConfig(batch=256, lr=3e-4, lmin=16, lmax=16, seeds=(0,)))
    runner = train.make_chunk_runner(cfg)
    states = train.init_states(cfg)
    compile_s, (states, _) = _timed(runner, states, jnp.int32(1))
    step_s = _best_of(runner, states, steps) / steps
    flop = transformer.flops_per_step(cfg.model, 256, 16, 20, 20)
    return {"seconds_per_step": step_s, "gflop_per_step": flop / 1e9,
            "gflops": flop / step_s / 1e9, "compile_s": compile_s}


def best_chunk(runner, states, steps: int, repeats: int) -> tuple[float, float]:
    """Least (wall, process CPU) seconds of `repeats` chunks after a warm-up: on a shared
    machine the CPU time is what the work costs, the wall time what this run got."""
    jax.block_until_ready(runner(states, jnp.int32(1)))  # compile and warm up
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(runner(states, jnp.int32(steps)))
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return wall, cpu


def best_in_turns(calls: dict, rounds: int) -> dict[Any, tuple[float, float]]:
    """{key: least (wall, process CPU) seconds} of `calls` ({key: a call that returns when its
    work is done}) over `rounds`, the calls taking turns within each round, so a drift in the
    machine's speed falls on every one alike."""
    best = {k: (float("inf"), float("inf")) for k in calls}
    for _ in range(rounds):
        for k, call in calls.items():
            w0, c0 = time.perf_counter(), time.process_time()
            call()
            w, c = time.perf_counter() - w0, time.process_time() - c0
            best[k] = (min(best[k][0], w), min(best[k][1], c))
    return best


def time_grid_program(g, layout: str, steps: int, repeats: int) -> tuple[float, float]:
    """(wall, CPU) ms per cell-step of one grid program (every task x seed of an encoding)."""
    from lgjax import grid

    T, S = g.shape
    secs = best_chunk(grid.make_grid_runner(g, layout), grid.init_states(g), steps, repeats)
    return tuple(1e3 * x / (steps * T * S) for x in secs)


def time_grid(steps: int, peak: float, tier: str = "1L1H", encoding: str = "rope") -> dict:
    """The realizability grid's program at the pinned recipe: ms per cell-step and the share of
    the matmul peak measured in the same run (the grid's figure of merit)."""
    from lgjax.studies.realizability import train as rt

    cfg = rt.Config()
    g = rt.program_grid(cfg, tier, encoding)
    flop = transformer.flops_per_step(g.model, g.train.batch, g.train.lmax, cfg.vocab, cfg.vocab)
    wall, cpu = time_grid_program(g, g.layout, steps, REPEATS)  # the study's own layout
    return {"tier": tier, "encoding": encoding, "layout": g.layout,
            "cells": g.shape[0] * g.shape[1],
            "gflop_per_cell_step": flop / 1e9, "ms_wall_per_cell_step": wall,
            "ms_cpu_per_cell_step": cpu, "peak_fraction": flop / (wall * 1e-3) / 1e9 / peak}


def format_table(rows: list[dict]) -> str:
    lines = [f"{'encoding':9s}{'S':>4s}  {'strategy':12s}{'path':15s}{'ms/seed-step':>13s}"
             f"{'seed-steps/s':>14s}{'compile s':>11s}"]
    for r in rows:
        ms = r["ms_per_seed_step"]
        lines.append(f"{r['encoding']:9s}{r['seeds']:>4d}  {r['strategy']:12s}"
                     f"{r.get('path', ''):15s}{ms:>13.3f}{1e3 / ms:>14.0f}"
                     f"{r.get('compile_s', float('nan')):>11.2f}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Config:
    steps: int = option(200, ge=1)  # timed steps per measurement
    torch: bool = True  # time the PyTorch eager reference too (needs the [bench] extra)
    table1: bool = True  # time the Table-1 (multiseed) workload end to end
    out: str = "results/bench"  # bench.json goes here


def main(cfg: Config) -> dict:
    out_dir = Path(cfg.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for enc in ("rope", "ape"):
        for S in (1, 8, 32):
            for strategy in {1: ("map",), 8: ("vmap", "map"), 32: ("vmap", "map", "blocks")}[S]:
                rows.append(time_multiseed(enc, S, cfg.steps, strategy))
        for S in (8, 32):
            rows.append(time_sequential(enc, S, cfg.steps))
        if cfg.torch:
            row = time_torch(enc, cfg.steps)
            if isinstance(row, str):
                print(f"PyTorch reference skipped: {row}")
            else:
                rows.append(row)
    print(format_table(rows))
    summary = {"rows": rows, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
               "backend": jax.default_backend(), "cpu_count": os.cpu_count(),
               "machine": platform.processor() or platform.machine()}
    for enc in ("rope", "ape"):
        def get(S, st, enc=enc):
            return next((r["ms_per_seed_step"] for r in rows if r["encoding"] == enc
                         and r["seeds"] == S and r["strategy"] == st), None)

        auto = {8: get(8, "vmap"), 32: get(32, "blocks")}  # what "auto" runs at each S
        ratios = {f"sequential/multiseed(auto) S={S}": get(S, "sequential") / auto[S]
                  for S in (8, 32)}
        if get(1, "torch-eager"):
            ratios["torch/multiseed(auto) S=8"] = get(1, "torch-eager") / auto[8]
        summary[f"{enc}_ratios"] = ratios
        print(f"{enc}: " + ", ".join(f"{k} = {v:.2f}x" for k, v in ratios.items()))
    summary["breakdown_ms"] = {enc: breakdown(enc) for enc in ("rope", "ape")}
    for enc, parts in summary["breakdown_ms"].items():
        print(f"{enc} one seed-step, pieces timed alone (ms, each includes one dispatch): "
              + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()))
    summary["matmul_gflops"] = matmul_peak()
    print("fp32 matmul GFLOP/s: " + ", ".join(f"n={n}: {g:.1f}"
                                             for n, g in summary["matmul_gflops"].items()))
    tf = summary["transformer"] = time_transformer()
    peak = max(summary["matmul_gflops"].values())
    print(f"transformer step (2 layers, 4 heads, d=192, MLP 4d, batch 256, length 16, RoPE): "
          f"{tf['seconds_per_step'] * 1e3:.0f} ms/step, {tf['gflop_per_step']:.1f} GFLOP/step, "
          f"{tf['gflops']:.1f} GFLOP/s = {100 * tf['gflops'] / peak:.0f}% of the matmul peak "
          f"{peak:.1f} (compile {tf['compile_s']:.1f} s)")
    gr = summary["grid"] = time_grid(max(5, cfg.steps // 20), peak)
    print(f"realizability grid, {gr['tier']} {gr['encoding']} program ({gr['cells']} cells, "
          f"{gr['layout']} layout, {jax.local_device_count()} device(s)): "
          f"{gr['ms_wall_per_cell_step']:.2f} ms wall per cell-step, "
          f"{gr['gflop_per_cell_step']:.3f} GFLOP: {100 * gr['peak_fraction']:.0f}% of the "
          f"matmul peak {peak:.1f}")
    if cfg.table1:
        from lgjax.bench import fixed_costs

        t1 = summary["table1"] = fixed_costs.measure()
        summary["table1_seconds"] = t1["wall_s"]
        print("\n".join(fixed_costs.format_lines(t1)))
    summary["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {summary['peak_rss_mb']:.0f} MB; jax {jax.__version__}, jaxlib "
          f"{jaxlib.__version__}, {os.cpu_count()} CPU threads, backend {jax.default_backend()}")
    (out_dir / "bench.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary



