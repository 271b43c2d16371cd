"""The expectation "RoPE stays near 1.0 to 48" (the transformer, shift K = 3): which element of
the recipe decides it. The reference is d = 192, batch 256, 8000 steps; `lgjax reproduce` on a
CPU used to train it at d = 64, batch 64, 1000 steps (256 evaluation sequences), where the
expectation failed. From that recipe, one element at a time is set to the reference's value
(the width also at values between), RoPE only, --seeds seeds; per variant the per-token
accuracy at every evaluation length (mean and range over seeds), whether the expectation's
criterion (>= 0.95 at every length, seed mean) holds, and the key carrier fraction of the
shift head (claim f6.key_frac) per seed.

A variant is "cpu" (that recipe) or changes joined by "-": d192, steps3000, batch256 (width,
steps, batch). Each is one `lgjax transformer` run under OUT (results OUT/<variant>, run
directories OUT/checkpoints/<variant>), so the script resumes: a finished variant is read back,
an unfinished one continues from its checkpoint.

    python experiments/transformer_recipe.py --out OUT [--seeds 3] \
        [--variants cpu,steps3000,steps8000,batch256,d96,d128,d192,d192-steps3000,d192-batch256] \
        [--carrier-readings]

--carrier-readings also reloads each variant's final states and reads the shift head's (the one
found at 48) key carrier under other readings: at the training length 16, the largest over
every head of both layers there, the keys' mean taken per position instead of pooled, and the
vocabulary alone through the head's LayerNorm and W_K (256 fresh sequences per length).

Measured: docs/studies/differences/implicit-bias.md.
"""
import argparse
import json
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from lgjax import models, open_run, tasks
from lgjax.harness.cli import main as lgjax
from lgjax.studies.implicit_bias import transformer
from lgjax.studies.implicit_bias.analysis import carrier_fraction
from lgjax.transformer import apply_with_keys

CPU = {"d": 64, "batch": 64, "steps": 1000}  # the reduced recipe `lgjax reproduce` ran on a CPU
VARIANTS = "cpu,steps3000,steps8000,batch256,d96,d128,d192,d192-steps3000,d192-batch256"
LEVEL = 0.95  # the expectation's criterion: seed-mean accuracy at every length


def recipe(name: str) -> dict:
    """A variant's recipe: "cpu", or the CPU recipe with each "-"-joined change (d192,
    steps3000, batch256) applied."""
    out = dict(CPU)
    for change in ([] if name == "cpu" else name.split("-")):
        key = next((k for k in CPU if change.startswith(k) and change[len(k):].isdigit()), None)
        if key is None:
            raise SystemExit(f"--variants: unknown variant {name!r} (cpu, or changes such as "
                             "d192, steps3000, batch256 joined by '-')")
        out[key] = int(change[len(key):])
    return out


def run(out: Path, name: str, seeds: int) -> dict:
    results = out / name / "results.json"
    if not results.exists():
        flags = [f"--{k}={v}" for k, v in recipe(name).items()]
        rc = lgjax(["transformer", "--encodings", "rope", f"--seeds={seeds}", *flags,
                    "--eval-sequences=256", f"--out={out / name}",
                    f"--ckpt-root={out / 'checkpoints'}", f"--run-name={name}", "--resume",
                    "--no-progress"])
        if rc:
            raise SystemExit(rc)
    return json.loads(results.read_text())


def show(name: str, r: dict) -> str:
    acc_SxL = np.asarray(r["rope"]["accuracy"])
    mean = acc_SxL.mean(0)
    cells = " ".join(f"{m:.3f} [{lo:.2f}-{hi:.2f}]"
                     for m, lo, hi in zip(mean, acc_SxL.min(0), acc_SxL.max(0)))
    holds = "holds" if mean.min() >= LEVEL else "fails"
    carrier = " ".join(f"{c:.3f}" for c in r["rope"]["shift_head_key_carrier"])
    return f"{name:>14s} | {cells} | {holds} | key carrier {carrier} | {r['wall_seconds']:.0f} s"


def vocabulary_carrier(emb_VxD, ln_params, w_DxDh) -> float:
    """The single-layer study's reading: the head's W_K applied to its block's LayerNorm of each
    token's embedding alone (the vocabulary uniform), as if nothing earlier wrote to the stream."""
    normed_VxD = nn.LayerNorm().apply({"params": ln_params}, jnp.asarray(emb_VxD))
    return float(carrier_fraction(np.asarray(normed_VxD, np.float64)
                                  @ np.asarray(w_DxDh, np.float64)))


def position_centred_fraction(keys_BxLxD) -> float:
    """The carrier fraction with the keys' mean taken per position: the sum over positions of
    ||E_b k_i||^2 over the sum of E_b ||k_i||^2 (not over every (sequence, position) pooled)."""
    keys_BxLxD = np.asarray(keys_BxLxD, np.float64)
    return float((keys_BxLxD.mean(0) ** 2).sum() / (keys_BxLxD ** 2).sum(-1).mean(0).sum())


def carrier_readings(out: Path, name: str) -> str:
    """Per seed, the shift head's key carrier under four readings: pooled over every key at the
    training length; the largest of any head there; the mean taken per position (at the longest
    profiled length); the vocabulary alone through the head's LayerNorm and W_K."""
    trained = open_run(out / "checkpoints" / name / "rope")
    states = trained.restore(trained.steps()[-1])
    rc = trained.config
    K, train_max = rc.task.opts.offset, rc.train.lmax
    longest = max(transformer.Config().profile_lengths)  # where `lgjax transformer` finds it
    per_seed = transformer.make_evaluator(rc, (train_max, longest), 256)(states)
    apply = jax.jit(apply_with_keys(rc.model, *models.vocab_sizes(rc)))
    b = tasks.sample_batch(rc.task, jax.random.key(1), 256, longest, longest, longest)
    cells = []
    for s, ps in enumerate(per_seed):
        layer, head = transformer.shift_head(ps, K, longest)
        params = jax.tree.map(lambda x, s=s: x[s], states.params)
        top = max(max(row) for row in ps[train_max]["key_carrier"])
        keys_BxLxD = np.asarray(apply(params, b.tokens, b.length)[2])[:, layer, :, head]
        block = params[f"block{layer}"]
        vocabulary = vocabulary_carrier(params["Embed_0"]["embedding"], block["LayerNorm_0"],
                                        block["key"]["kernel"][:, head])
        cells.append(f"{ps[train_max]['key_carrier'][layer][head]:.3f} (any head {top:.3f}; "
                     f"per position {position_centred_fraction(keys_BxLxD):.3f}; "
                     f"vocabulary {vocabulary:.3f}; layer {layer} head {head})")
    return f"{name:>14s} | key carrier at {train_max}: {', '.join(cells)}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--variants", default=VARIANTS)
    p.add_argument("--carrier-readings", action="store_true")
    a = p.parse_args()
    out = Path(a.out)
    runs = {name: run(out, name, a.seeds) for name in a.variants.split(",")}
    lengths = next(iter(runs.values()))["lengths"]
    print(f"RoPE per-token accuracy, mean [min-max] over {a.seeds} seeds, at L = "
          f"{', '.join(map(str, lengths))}; criterion: >= {LEVEL} at every length")
    for name, r in runs.items():
        print(show(name, r))
    if a.carrier_readings:
        for name in runs:
            print(carrier_readings(out, name))


if __name__ == "__main__":
    main()
