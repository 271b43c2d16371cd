"""The contract study's measurements on trained cells (docs/studies/contract.md, the trained
matrix).

Per (task, scheme) cell, every seed: held-out in-range accuracy and loss; shifted accuracy and
shift consistency under PAD prefixes; accuracy at the extension lengths without intervention,
with position interpolation and through the retrieval system; the head chosen on in-range data
(most often attending the evidence), its distance-confusion matrix and failure by relative
offset; the attention-logit range per head. Across cells: the in-range loss at every checkpoint
and the matched-training-loss comparison. Evaluation batches for a length are the same for every
scheme of a task (keys from the seed and the condition), so interventions compare paired.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from lgjax import transformer
from lgjax.attention import attention_logits
from lgjax.checkpoints.integrity import write_atomic
from lgjax.config import ModelConfig, TaskConfig
from lgjax.devices import is_leader
from lgjax.encodings import ENCODINGS
from lgjax.harness.outputs import jsonable
from lgjax.harness.study import Trained
from lgjax.keys import EVAL, seed_keys, stream
from lgjax.models import vocab_sizes
from lgjax.runs import open_run
from lgjax.studies.contract import readouts as contract_eval
from lgjax.studies.contract import scores as contracts
from lgjax.studies.contract import tasks
from lgjax.tasks import sample_batch
from lgjax.train import accepted_fast_compile

BIN = 4  # distance bin width of the confusion matrices and failure-by-offset curves
NONLOCAL = 4  # the chosen head misattends "far" when its key is >= this from the evidence
IN_RANGE, SHIFT = 0, 1000  # EVAL key indices: in-range batch, shift pair (+c); a length L uses L
CELL_FILE = "contract-cell.json"  # a cell's measurement, kept in its run directory
MEASURE_VERSION = 1  # bump when measure_cell changes what it measures: saved cells then redo
CHUNK_ROWS = 4096  # token rows per step of a cell's evaluation loop (chunk_size)
LAB = {"ape": "learned", "sinusoidal": "sinusoidal", "relclip": "relative", "rope": "rope",
       "alibi": "alibi", "nope": "nope"}  # scheme -> its stand-in in the contract lab


def query_readout(cfg: ModelConfig, m_in: int, m_out: int):
    """One sequence -> (logits [m_out], attention [A, L], attention logits [A, L]) of the query
    row n = length-1, A = layers x heads (layer-major). The model computes its last block at
    that row alone; the logits are recomputed from the captured q/k projections by
    `lgjax.attention.attention_logits`, as the block forms them."""
    model = transformer.Transformer(cfg, m_in, m_out, query_row=True)
    enc = ENCODINGS[cfg.encoding]

    def one(params, tokens_L, length):
        # LayerNorm_0 of a block: the states its q, k, v are projected from, which a
        # content-aware encoding's logits read
        (logits_M, att_NxHxL), state = model.apply(
            {"params": params}, tokens_L, length, mutable=["intermediates"],
            capture_intermediates=lambda mdl, _: mdl.name in ("query", "key", "LayerNorm_0"))
        n, pos = length - 1, jnp.arange(tokens_L.shape[0])
        rows = []
        for i in range(cfg.layers):
            inter = state["intermediates"][f"block{i}"]
            # as the block turns them: xPos scales queries and keys apart, dynamic NTK reads
            # the length, FIRE's bias has params per block
            q, k = enc.rotate_pair(inter["query"]["__call__"][0], inter["key"]["__call__"][0],
                                   pos, length, cfg)
            rows.append(attention_logits(q, k, length, transformer.encoding_params(params, cfg, i),
                                         cfg, None, inter["LayerNorm_0"]["__call__"][0], n)[:, 0])
        A = cfg.layers * cfg.heads
        return logits_M, att_NxHxL.reshape(A, -1), jnp.stack(rows).reshape(A, -1)

    return one


@functools.lru_cache(maxsize=64)
def _program(cfg: ModelConfig, m_in: int, m_out: int, chunk: int):
    """jit(params_S, tokens [S, B, L], lengths [S, B]): seeds and chunks of the batch under
    lax.map (a long batch's attention would not fit at once)."""
    batched = jax.vmap(query_readout(cfg, m_in, m_out), in_axes=(None, 0, 0))

    def per_seed(params, tokens, lengths):
        B = tokens.shape[0]
        split = lambda x: x.reshape(B // chunk, chunk, *x.shape[1:])
        out = jax.lax.map(lambda a: batched(params, *a), (split(tokens), split(lengths)))
        return jax.tree.map(lambda x: x.reshape(B, *x.shape[2:]), out)

    return jax.jit(lambda p_S, t_S, n_S: jax.lax.map(lambda a: per_seed(*a), (p_S, t_S, n_S)))


def chunk_size(B: int, L: int) -> int:
    """Sequences per step of `_program`'s loop: the fewest (a divisor of B) that make CHUNK_ROWS
    token rows, so a long batch's attention stays near a CPU's caches (docs/results/
    performance.md); with fewer rows XLA's CPU matrix products sum in another order and the
    last bits of the logits move."""
    return min(c for c in range(1, B + 1) if B % c == 0 and (c * L >= CHUNK_ROWS or c == B))


@functools.cache
def _sampler():
    """jit of `_draw` at XLA's lowest optimization: a batch is drawn once per program, and its
    integer and bit arithmetic compiles ~3x faster there with the same draws."""
    return jax.jit(_draw, static_argnums=(0, 1, 3, 4),
                   compiler_options=dict(accepted_fast_compile(jax.default_backend())))


def _draw(draw, task, keys_S, index, args):
    return jax.vmap(lambda k: draw(task, stream(k, EVAL, index), *args))(keys_S)


def sample(task: TaskConfig, seeds, index, *args, draw=sample_batch):
    """Per seed, draw(task, key, *args) (numpy) with the key of the seed's EVAL stream `index`:
    a batch (args n, lmin, lmax, Lpad), or with `tasks.sample_shift_pair` a pair (args + shift)."""
    return jax.tree.map(np.asarray, _sampler()(draw, task, seed_keys(seeds), index, args))


def evidence_of(task: TaskConfig, batch) -> np.ndarray:
    return np.asarray(tasks.TASKS[task.name].evidence(batch.tokens, batch.length, task))


def near_far(task: TaskConfig, batch, correct_SxB) -> dict:
    if task.name != "ordered_update":
        return {}
    far = np.asarray(tasks.distance_bin(batch.tokens, batch.length, task)) == 1
    mean = lambda m: (correct_SxB * m).sum(1) / np.maximum(m.sum(1), 1)
    return {"near": mean(~far), "far": mean(far), "far_fraction": far.mean(1)}


class Cell:
    """The measurements of one trained cell (`measure_cell` collects them)."""

    def __init__(self, t: Trained, cfg):
        self.t, self.cfg = t, cfg
        self.rc, self.task, self.model = t.config, t.config.task, t.config.model
        self.params_S, self.seeds = t.states.params, t.config.train.seeds
        self.lmin, self.lmax = t.config.train.lmin, t.config.train.lmax
        self.n = cfg.run.eval_sequences
        self.n_bins = math.ceil(max(cfg.extend) / BIN)

    def run(self, b, model: ModelConfig | None = None, params_S=None) -> list[np.ndarray]:
        """[logits, attention, attention logits] per seed of batch b through the cell's model and
        parameters, or through `model` (an intervention) or `params_S` (another checkpoint)."""
        return [np.asarray(x) for x in self.dispatch(b, model, params_S)]

    def dispatch(self, b, model: ModelConfig | None = None, params_S=None):
        """`run`'s arrays as the program hands them back, before they are computed."""
        program = _program(model or self.model, *vocab_sizes(self.rc),
                           chunk_size(*b.tokens.shape[1:]))
        return program(self.params_S if params_S is None else params_S, b.tokens, b.length)

    def correct(self, logits, batch):
        return (logits.argmax(-1) == batch.targets).astype(float)

    def accuracy(self, b, model: ModelConfig | None = None) -> np.ndarray:
        """[S]: accuracy on batch b (through `model` when given)."""
        return self.correct(self.run(b, model)[0], b).mean(1)

    @staticmethod
    def loss(logits, batch) -> np.ndarray:
        """[S]: mean cross-entropy over the batch."""
        logz = np.asarray(jax.nn.log_softmax(logits, -1))
        return -np.take_along_axis(logz, batch.targets[..., None], -1)[..., 0].mean(1)

    def in_range(self) -> dict:
        b = sample(self.task, self.seeds, IN_RANGE, self.n, self.lmin, self.lmax, self.lmax)
        logits, att, att_logits = self.run(b)
        ok = self.correct(logits, b)
        evidence = evidence_of(self.task, b)
        rates = contract_eval.hit_rates(att.argmax(-1), evidence)
        self.head_S = rates.argmax(-1)
        need, got = self.distances(att, b, evidence)
        return {"accuracy": ok.mean(1), "loss": self.loss(logits, b), "head": self.head_S,
                "hit_rate": rates.max(-1), "hit_rates": rates,
                "logit_range": logit_ranges(att_logits, b), **near_far(self.task, b, ok),
                "confusion": contract_eval.confusion(need, got, BIN, self.n_bins).tolist()}

    def distances(self, att, b, evidence):
        """[S, B] distances (from the query) needed and attended by each seed's chosen head."""
        query = b.length - 1
        attended = np.take_along_axis(att.argmax(-1), self.head_S[:, None, None], axis=2)[..., 0]
        return query - evidence, query - attended

    def shifts(self) -> dict:
        out = {}
        for c in self.cfg.shifts:
            plain, moved = sample(self.task, self.seeds, SHIFT + c, self.n, self.lmin,
                                  self.lmax - c, self.lmax, c, draw=tasks.sample_shift_pair)
            before, after = self.run(plain)[0], self.run(moved)[0]
            out[str(c)] = {"accuracy": self.correct(after, moved).mean(1),
                           "consistency": (before.argmax(-1) == after.argmax(-1)).mean(1)}
        return out

    def extension(self) -> dict:
        out, conf, total, hits = {}, 0, 0, 0
        for L in self.cfg.extend:
            b = sample(self.task, self.seeds, L, self.n, L, L, L)
            logits, att, att_logits = self.run(b)
            ok = self.correct(logits, b)
            evidence = evidence_of(self.task, b)
            need, got = self.distances(att, b, evidence)
            conf = conf + contract_eval.confusion(need, got, BIN, self.n_bins)
            t, h = contract_eval.failure_by_offset(need, ok, BIN, self.n_bins)
            total, hits = total + t, hits + h
            # position interpolation is defined per encoding (readouts.INTERPOLATIONS); a
            # scheme without one (a plugin's) has no PI column
            pi = ({"pi": self.interpolation(b, L)}
                  if self.model.encoding in contract_eval.INTERPOLATIONS else {})
            if contract_eval.extends_rope(self.model):
                pi.update({name: self.accuracy(b, contract_eval.rope_extended(
                    self.model, name, L, self.lmax)) for name in contract_eval.ROPE_EXTENSIONS})
            out[str(L)] = {"none": ok.mean(1), **pi,
                           "retrieval": self.retrieval(b, evidence),
                           "logit_range": logit_ranges(att_logits, b),
                           "nonlocal": (np.abs(got - need) >= NONLOCAL).mean(1),
                           **near_far(self.task, b, ok)}
        out["confusion"] = conf.tolist()
        out["failure"] = {"bin": BIN, "total": total.tolist(), "correct": hits.tolist()}
        return out

    def interpolation(self, b, L) -> np.ndarray:
        with contract_eval.pi_encodings():
            return self.accuracy(b, contract_eval.interpolated(self.model, L, self.lmax))

    def retrieval(self, b, evidence) -> np.ndarray:
        start, e = contract_eval.evidence_span(self.task.name, evidence, self.task)
        idx = np.asarray(contract_eval.retrieval_index(start, e, b.length, self.lmax))
        kept = b._replace(tokens=np.take_along_axis(b.tokens, idx, -1),
                          length=np.full_like(b.length, self.lmax))
        return self.accuracy(kept)

    def loss_curve(self) -> dict:
        """In-range loss (probe batch) at every saved checkpoint: the training trajectory."""
        n = self.cfg.probe_sequences
        b = sample(self.task, self.seeds, IN_RANGE, n, self.lmin, self.lmax, self.lmax)
        steps, logits = [], []
        with open_run(self.t.run_dir) as run:  # for reading
            for step in sorted(run.steps()):  # the next restore overlaps this evaluation
                steps.append(step)
                logits.append(self.dispatch(b, params_S=run.restore(step).params)[0])
        return {"steps": steps, "loss": np.asarray([self.loss(np.asarray(x), b) for x in logits])}


def logit_ranges(att_logits, b) -> np.ndarray:
    """[S, A]: mean over sequences of each head's logit range at the query."""
    return contract_eval.logit_range(att_logits, b.length).mean(1)


def parameter_counts(t: Trained) -> dict:
    # one seed's shapes (indexing the arrays compiled a program per leaf)
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), t.states.params)
    count = lambda tree: int(sum(math.prod(x.shape) for x in jax.tree.leaves(tree)))
    m = t.config.model
    # a per-layer encoding (FIRE, the content-aware entries) has a copy in every block
    blocks = range(m.layers) if ENCODINGS[m.encoding].per_layer else range(1)
    total = count(one)
    enc = sum(count(transformer.encoding_params(one, m, i)) for i in blocks)
    # APE rows past the trained range are never read in training
    trained = m.enc.train_max * m.d if m.encoding == "ape" else enc
    return {"total": total, "encoding": enc, "encoding_trained": trained,
            "total_trained": total - enc + trained}


def measure_cell(cfg, t: Trained) -> dict:
    cell = Cell(t, cfg)
    in_range = cell.in_range()  # first: it chooses the head the extension readouts follow
    return {"in_range": in_range, "shift": cell.shifts(), "extend": cell.extension(),
            "curve": cell.loss_curve(), "params": parameter_counts(t),
            "train_seconds": t.seconds}


def cell_key(cfg, t: Trained) -> dict:
    """What a cell's measurement depends on besides its final state: the run's config and the
    evaluation options (as JSON reads them back)."""
    return json.loads(json.dumps({
        "version": MEASURE_VERSION, "run": json.loads(t.config.to_json()),
        "eval_sequences": cfg.run.eval_sequences, "extend": cfg.extend, "shifts": cfg.shifts,
        "probe_sequences": cfg.probe_sequences}))


def saved_cell(cfg, t: Trained) -> dict | None:
    """The measurement saved in the cell's run directory, when it is of these very options."""
    path = Path(t.run_dir) / CELL_FILE
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text())
        if saved["key"] == cell_key(cfg, t):
            return saved["cell"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"lgjax: {path} is damaged ({type(err).__name__}); the cell is measured again",
              file=sys.stderr)
    return None


def measured_cell(cfg, t: Trained, save: bool = True) -> dict:
    """The cell's measurement, as its JSON reads back (so a saved one and a fresh one are the
    same numbers): the one saved in its run directory, else measured now and (save) saved
    there, so that a rerun, or a job killed while measuring, does not measure it again."""
    cell = saved_cell(cfg, t)
    if cell is None:
        cell = json.loads(json.dumps(measure_cell(cfg, t), default=jsonable))
        if save and is_leader():
            write_atomic(Path(t.run_dir) / CELL_FILE,
                         json.dumps({"key": cell_key(cfg, t), "cell": cell}))
    return cell


def probe_losses(curve: dict) -> np.ndarray:
    """[K, S] the loss curve's values as the model computed them (float32; a cell read back
    from JSON holds them as floats, and a float64 mean would move the matched level ~1e-8)."""
    return np.asarray(curve["loss"], np.float32)


def matched_loss(cfg, trained: dict, cells: dict) -> dict:
    """Schemes compared at equal in-range loss: per task, the level every learnable scheme
    reached (the highest of their lowest seed-mean losses); each seed's first checkpoint at or
    below it, evaluated at the extension lengths."""
    out = {}
    for task, row in cells.items():
        learnable = {s: c for s, c in row.items()
                     if np.mean(c["in_range"]["accuracy"]) >= cfg.learnable}
        if not learnable:
            continue
        level = max(float(probe_losses(c["curve"]).mean(1).min())
                    for c in learnable.values())
        out[task] = {"level": level, "schemes": {}}
        for scheme, c in learnable.items():
            t = trained[f"contract/{task}/{scheme}"]
            out[task]["schemes"][scheme] = c["matched"] = matched_cell(cfg, t, c["curve"],
                                                                        level)
    return out


def matched_cell(cfg, t: Trained, curve: dict, level: float) -> dict:
    loss_KxS = probe_losses(curve)
    steps = np.asarray(curve["steps"])
    first = np.where((loss_KxS <= level).any(0), (loss_KxS <= level).argmax(0), len(steps) - 1)
    with open_run(t.run_dir) as run:
        restored = {int(steps[k]): run.restore(int(steps[k])).params for k in set(first)}
    params_S = jax.tree.map(lambda *x: np.stack(x), *[
        jax.tree.map(lambda a, s=s: a[s], restored[int(steps[k])]) for s, k in enumerate(first)])
    matched = Trained(t.config, t.states._replace(params=params_S), t.run_dir, 0.0)
    cell = Cell(matched, cfg)
    acc = [cell.accuracy(sample(cell.task, cell.seeds, L, cell.n, L, L, L)) for L in cfg.extend]
    return {"step": steps[first], "loss": loss_KxS[first, np.arange(len(first))],
            "extend": np.mean(acc, 0)}


def scheme_order(scheme: str) -> tuple[int, str]:
    """The lab's order, then any other registered encoding (a plugin's) by name."""
    return (list(LAB).index(scheme) if scheme in LAB else len(LAB), scheme)


def measure_matrix(cfg, trained: dict, save: bool = True) -> dict:
    """Every trained cell (a partial matrix measures what it has; a cell measured before at
    these options is read back), then the cross-cell checks."""
    cells: dict[str, dict] = {}
    for name, t in trained.items():
        task, scheme = Path(name).parts[-2:]
        cells.setdefault(task, {})[scheme] = measured_cell(cfg, t, save)
    any_t = next(iter(trained.values()))
    return {"tasks": list(cells), "schemes": sorted({s for r in cells.values() for s in r},
                                                    key=scheme_order),
            "seeds": list(any_t.config.train.seeds), "steps": any_t.config.train.steps,
            "batch": any_t.config.train.batch, "train_lengths": list(cfg.train_lengths),
            "extend": list(cfg.extend), "shifts": list(cfg.shifts),
            "eval_sequences": cfg.run.eval_sequences, "learnable": cfg.learnable,
            "cells": cells, "matched": matched_loss(cfg, trained, cells),
            "lab": contracts.lab(cfg.train_lengths[1], max(cfg.extend), 17), "lab_names": LAB,
            "vocab_sizes": {t: list(vocab_sizes(trained[f"contract/{t}/{s}"].config))
                            for t, r in cells.items() for s in r}}
