"""Table 8's "max-head peak attention height" at H = 4 under each reading of "max-head". The
variants part (d) runs (RoPE, K = 2, d = 64, H = 1 and 4, 5 seeds x 4000 steps, batch 256,
lengths 8-16) trained or reloaded under --ckpt-root (the same run directories as `lgjax
variants`, so a finished one is read back), evaluated on 4096 fresh sequences per length; the
last query row's mean attention per head gives, per length:

  * lgjax's: per seed the largest peak over heads, then the mean over seeds;
  * the largest over heads of the seed-mean peak (the `variants` table's printout);
  * one head per seed, fixed: the head with the most attention at -K at L = 16, followed to
    every length (its peak, and its attention at -K);
  * the mean over heads of the peak;
  * and how many heads of each seed peak at -K, with the attention at -K summed over them.

    python experiments/heads_readings.py --out OUT --ckpt-root CK

Measured: docs/studies/differences/implicit-bias.md.
"""
import argparse
import json
from pathlib import Path

import numpy as np

from lgjax import evaluate
from lgjax.harness.study import RunOptions, train_one
from lgjax.studies.implicit_bias import variants

PUBLISHED = {"H4": {12: 0.67, 16: 0.63, 24: 0.44, 32: 0.42, 48: 0.30},
             "H1": {12: 0.83, 16: 0.83, 24: 0.82, 32: 0.76, 48: 0.69}}


def readings(att_SxLxHxP, lengths, K: int) -> dict:
    """att: the last query row's mean attention [seed, length, head, position]."""
    L_at = {L: j for j, L in enumerate(lengths)}
    peak_SxLxH = att_SxLxHxP.max(-1)
    at_K_SxLxH = np.stack([att_SxLxHxP[:, j, :, L - 1 - K] for L, j in L_at.items()], 1)
    fixed_S = at_K_SxLxH[:, L_at[16]].argmax(-1)  # the -K head of each seed, chosen at L = 16
    pick = lambda a_SxLxH: np.take_along_axis(a_SxLxH, fixed_S[:, None, None], -1)[..., 0]
    selects_K_SxLxH = (att_SxLxHxP.argmax(-1) == (np.array(lengths) - 1 - K)[None, :, None])
    return {"lgjax (per seed max over heads, then mean)": peak_SxLxH.max(-1).mean(0),
            "max over heads of the seed-mean": peak_SxLxH.mean(0).max(-1),
            "fixed -K head: its peak": pick(peak_SxLxH).mean(0),
            "fixed -K head: its attention at -K": pick(at_K_SxLxH).mean(0),
            "mean over heads of the peak": peak_SxLxH.mean((0, 2)),
            "heads peaking at -K (mean per seed)": selects_K_SxLxH.sum(-1).mean(0),
            "attention at -K summed over heads": at_K_SxLxH.sum(-1).mean(0),
            "lgjax's, per seed": peak_SxLxH.max(-1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ckpt-root", required=True)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = variants.Config(parts="d", run=RunOptions(seeds=5, ckpt_root=a.ckpt_root,
                                                    progress=False, devices=1))
    lengths = cfg.eval_lengths
    res = {}
    for name, rc in variants.runs(cfg).items():
        H = f"H{rc.model.heads}"
        t = train_one(rc, Path(a.ckpt_root) / name, cfg.run, name)
        ev = evaluate.evaluate(t.states.params, rc, lengths, cfg.run.eval_sequences)
        att = np.asarray(ev.mean_attention)  # [S, lengths, H, Lpad]
        res[H] = {k: np.asarray(v).tolist()
                  for k, v in readings(att, lengths, rc.task.opts.offset).items()}
        print(f"{H} (lengths {list(lengths)}; published {PUBLISHED[H]}), {t.seconds:.0f} s")
        for k, v in res[H].items():
            rows = v if k.endswith("per seed") else [v]
            for row in rows:
                print(f"  {k:>45s}: " + " ".join(f"{x:.3f}" for x in row))
    (out / "results.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
