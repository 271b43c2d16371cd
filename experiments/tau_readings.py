"""Table 4's tau rows: which reading of tau the study's numbers follow. lgjax's `temperature`
divides the logits (q.k / (sqrt(d_head) temperature)); the study never defines tau. `mechanics`
sweeps temperature 0.5, 1, 2 with one seed and reads tau = 0.5 / 2 as temperature 0.5 / 2
("divides") or 2 / 0.5 ("multiplies"). Here the same recipe (mechanics part (d): RoPE, K = 2,
d = 64, vocab 20, lengths 8-16, 4000 steps, batch 256) at five temperatures and five seeds, so
that the direction of each measure along the temperature axis is separated from seed noise:
per seed the key carrier fraction, the decay fit (alpha, c, R^2) of the peak height over the
evaluation lengths, and acc@48. Resumable: finished runs are reloaded from --ckpt-root, a
measured temperature is read back from OUT/results.json.

    python experiments/tau_readings.py --out OUT --ckpt-root CK [--seeds 5] [--temps ...]

Measured: docs/studies/differences/implicit-bias.md.
"""
import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from lgjax.harness.study import RunOptions, train_one
from lgjax.studies.implicit_bias import analysis, common, mechanics

PUBLISHED = {0.5: 0.86, 1.0: 0.80, 2.0: 0.73}  # Table 4, key carrier fraction at the study's tau


def measure(cfg: mechanics.Config, t) -> dict:
    ev = common.evaluate_run(t, cfg.eval_lengths, cfg.run)
    peak, _ = common.peak_head(ev)
    L = max(cfg.eval_lengths)
    out = {"carrier_key": [], "alpha": [], "c": [], "r2": [], "acc48": []}
    for s in range(len(t.config.train.seeds)):
        p = jax.tree.map(lambda x, s=s: x[s], t.states.params)
        hm = analysis.head_metrics(p, t.config.model, cfg.K, L)
        fit = analysis.decay_fit(cfg.eval_lengths, peak[s])
        out["carrier_key"].append(float(hm["carrier_key"][0]))
        out["alpha"].append(fit["alpha"])
        out["c"].append(fit["c"])
        out["r2"].append(fit["r2"])
        out["acc48"].append(float(np.asarray(ev.accuracy)[s, -1]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root", required=True)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--temps", default="0.25,0.5,1,2,4")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    res = json.loads(path.read_text()) if path.exists() else {}
    opts = RunOptions(seeds=a.seeds, ckpt_root=a.ckpt_root, progress=False, devices=1,
                      eval_sequences=4096)
    cfg = mechanics.Config(run=opts)
    for temp in map(float, a.temps.split(",")):
        key = f"{temp:g}"
        if key in res and len(res[key]["carrier_key"]) == a.seeds:
            continue
        rc = mechanics.rope(cfg, a.seeds, temperature=temp)
        t0 = time.perf_counter()
        t = train_one(rc, Path(a.ckpt_root) / f"tau-readings/temperature{key}", opts, key)
        res[key] = measure(cfg, t) | {"wall_s": time.perf_counter() - t0}
        path.write_text(json.dumps(res, indent=1))
    print("temperature | key carrier fraction per seed | mean +- sd | alpha | c | R^2 | acc@48")
    for key in sorted(res, key=float):
        r = res[key]
        cf = np.array(r["carrier_key"])
        print(f"{key:>5s} | {' '.join(f'{x:.3f}' for x in cf)} | {cf.mean():.3f} +- "
              f"{cf.std():.3f} | {np.mean(r['alpha']):.3f} | {np.mean(r['c']):.4f} | "
              f"{np.mean(r['r2']):.3f} | {np.mean(r['acc48']):.3f}")
    print("study's tau -> the temperature each reading runs (carrier fraction, seed mean):")
    for tau, pub in PUBLISHED.items():
        div, mul = res.get(f"{tau:g}"), res.get(f"{1 / tau:g}")
        show = lambda r: f"{np.mean(r['carrier_key']):.3f}" if r else "not run"
        print(f"  tau {tau:g}: published {pub}; divides (temperature {tau:g}) {show(div)}; "
              f"multiplies (temperature {1 / tau:g}) {show(mul)}")


if __name__ == "__main__":
    main()
