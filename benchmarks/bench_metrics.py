"""What saving metrics.jsonl (and the TensorBoard scalars) costs: the Table-1 workload
(`lgjax bench`'s: multiseed, rope + ape, 8 seeds) with and without it, interleaved, in one
process, plus the time spent inside the metrics log itself (a floor of the overhead that
the machine's load does not blur).

    python benchmarks/bench_metrics.py [PAIRS] [STEPS]    # defaults: 2 pairs, 4000 steps

STEPS below 4000 is a reduced workload with the same chunking (chunk 250, checkpoints at 1, 2,
4, ..., 64 and every 125). Prints one line per run and the ratios.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lgjax.checkpoints import metrics  # noqa: E402
from lgjax.harness.study import RunOptions, run_study  # noqa: E402
from lgjax.runtime import enable_compile_cache  # noqa: E402
from lgjax.studies.implicit_bias import multiseed  # noqa: E402

LOGS: list[metrics.Log] = []


class Counted(metrics.Log):
    def __init__(self, *args):
        super().__init__(*args)
        LOGS.append(self)


class Off(metrics.Log):
    """Writes nothing: the workload as it was before metrics existed."""

    def resume(self, start):
        pass

    def watch(self, runner):
        return runner

    def flush(self):
        pass


def once(log_cls, steps: int) -> dict:
    metrics.Log = log_cls
    LOGS.clear()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = multiseed.Config(run=RunOptions(seeds=8, steps=steps, out=f"{tmp}/out",
                                              ckpt_root=f"{tmp}/ckpt", progress=False))
        t0 = time.perf_counter()
        result = run_study(multiseed.STUDY, cfg)
        wall = time.perf_counter() - t0
    return {"wall": wall, "train": sum(result["train_seconds"].values()),
            "in_log": sum(log.seconds for log in LOGS)}


def main(pairs: int = 2, steps: int = 4000) -> None:
    enable_compile_cache()
    real = metrics.Log
    once(Off, steps)  # warm-up: compiles into the cache, so neither side pays for it
    runs = {"off": [], "on": []}
    for _ in range(pairs):
        for name, cls in (("off", Off), ("on", Counted)):
            runs[name].append(once(cls, steps))
            r = runs[name][-1]
            print(f"metrics {name:3s}: wall {r['wall']:.1f} s, training {r['train']:.1f} s, "
                  f"inside the metrics log {r['in_log']:.3f} s", flush=True)
    metrics.Log = real
    total = {k: {f: sum(r[f] for r in v) for f in ("wall", "train", "in_log")}
             for k, v in runs.items()}
    ratio = lambda f: total["on"][f] / total["off"][f]
    print(f"{steps} steps, {pairs} pairs: wall on/off = {ratio('wall'):.4f}, "
          f"training on/off = {ratio('train'):.4f}, time inside "
          f"the log / wall = {100 * total['on']['in_log'] / total['on']['wall']:.3f}%")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
