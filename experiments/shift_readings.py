"""The `shift` expectation "APE curves coincide in absolute coordinates", read several ways. The
multiseed K = 1 runs (RoPE and APE, 8 seeds x 4000 steps, batch 256, lengths 8-16) trained or
reloaded under --ckpt-root (the directories `lgjax shift` and `lgjax multiseed` share), their
last query row's mean attention over 4096 sequences at lengths 16, 24, 32, 48, compared across
lengths in relative (aligned at the query) and absolute (aligned at position 0) coordinates:

  * lgjax's: the largest gap between the seed-averaged length-curves (max over positions);
  * the mean gap over the shared positions (a whole-curve distance rather than a peak's);
  * both over the lengths beyond the trained range only (24, 32, 48: where APE is "pinned");
  * per seed: where each length's curve peaks (absolute position and offset), and the largest
    gap per seed.

    python experiments/shift_readings.py --out OUT --ckpt-root CK

Measured: docs/studies/differences/implicit-bias.md.
"""
import argparse
import json
from pathlib import Path

import numpy as np

from lgjax.harness.study import RunOptions, train_one
from lgjax.studies.implicit_bias import common, shift


def gaps(curves, coords: str) -> tuple[float, float]:
    """(largest, mean) gap between the length-curves over the positions they share."""
    n = min(len(c) for c in curves)
    aligned = np.stack([c[-n:] if coords == "relative" else c[:n] for c in curves])
    gap = aligned.max(0) - aligned.min(0)
    return float(gap.max()), float(gap.mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root", required=True)
    a = p.parse_args()
    cfg = shift.Config(run=RunOptions(seeds=8, ckpt_root=a.ckpt_root, progress=False,
                                      devices=1))
    res = {}
    for name, rc in shift.runs(cfg).items():
        enc = rc.model.encoding
        t = train_one(rc, Path(a.ckpt_root) / name, cfg.run, name)
        att_SxLxP = np.asarray(common.evaluate_run(t, cfg.lengths, cfg.run).mean_attention)[:, :, 0]
        per_seed = [[att_SxLxP[s, j, :L] for j, L in enumerate(cfg.lengths)]
                    for s in range(att_SxLxP.shape[0])]
        mean = [att_SxLxP[:, j, :L].mean(0) for j, L in enumerate(cfg.lengths)]
        beyond = [c for c, L in zip(mean, cfg.lengths) if L > rc.train.lmax]
        r = {"seed-mean": {c: gaps(mean, c) for c in ("relative", "absolute")},
             "seed-mean beyond the range": {c: gaps(beyond, c) for c in ("relative", "absolute")},
             "seed-mean peak position": [int(np.argmax(c)) for c in mean],
             "peak_position_per_seed": [[int(np.argmax(c)) for c in cs] for cs in per_seed],
             "peak_height_per_seed": [[float(np.max(c)) for c in cs] for cs in per_seed],
             "per_seed_max_gap": {c: [gaps(cs, c)[0] for cs in per_seed]
                                  for c in ("relative", "absolute")}}
        res[enc] = r
        print(f"{enc} (lengths {list(cfg.lengths)}), {t.seconds:.0f} s")
        for c in ("relative", "absolute"):
            mx, mn = r["seed-mean"][c]
            ps = np.array(r["per_seed_max_gap"][c])
            bx, bn = r["seed-mean beyond the range"][c]
            print(f"  {c:>8s}: seed-mean curves largest gap {mx:.3f}, mean gap {mn:.4f}; per seed "
                  f"largest gap median {np.median(ps):.3f} (range {ps.min():.3f}-{ps.max():.3f}); "
                  f"beyond the range only: largest {bx:.3f}, mean {bn:.4f}")
        print(f"  seed-mean curves peak at positions {r['seed-mean peak position']}")
        for s, (pos, h) in enumerate(zip(r["peak_position_per_seed"], r["peak_height_per_seed"])):
            print(f"  seed {s}: peak position by length {pos}, height "
                  + " ".join(f"{x:.2f}" for x in h))
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "results.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
