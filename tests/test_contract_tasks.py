from dataclasses import replace

import chex
import jax
import numpy as np
import pytest

from lgjax.config import ConfigError, ModelConfig, RunConfig, TaskConfig, TrainConfig
from lgjax.models import vocab_sizes
from lgjax.studies.contract.tasks import (
    CONTRACT_TASKS,
    NEAR_FAR,
    distance_bin,
    last_set_distance,
    sample_shift_pair,
)
from lgjax.tasks import TASKS, sample_batch
from lgjax.validation import validate
from tests.conftest import task_config

FAMILIES = sorted(CONTRACT_TASKS)


def loop_truth(name, toks, L, cfg):
    """Plain-Python statement of each family on one sequence: (label, evidence position).
    Also checks the sequence's structure (prefix, markers, writes) while it walks it."""
    V, P = cfg.vocab, getattr(cfg.opts, "period", None)
    PAD, SET, MARK = V, V + 1, V + 2
    toks = [int(t) for t in toks[:L]]
    c = 0
    while c < L and toks[c] == PAD:
        c += 1
    assert c == cfg.opts.pad_prefix
    content = toks[c:]
    n = len(content) - 1  # the query, in the content frame
    assert PAD not in content
    if name in ("absolute_anchor", "offset_copy"):
        assert max(content) < V
        u = cfg.opts.anchor_slot if name == "absolute_anchor" else n - cfg.opts.copy_offset
        return content[u], c + u
    if name == "ordered_update":
        assert MARK not in content
        writes = [u for u in range(len(content)) if content[u] == SET]
        assert 2 <= len(writes) <= 4 and n - writes[-1] >= 2
        values = [content[u + 1] for u in writes]
        assert max(values) < V and len(set(values)) == len(values)  # distinct values
        assert all(b - a >= 2 for a, b in zip(writes, writes[1:]))  # pairs do not overlap
        return values[-1], c + writes[-1] + 1
    assert SET not in content
    marks = [u for u in range(len(content)) if content[u] == MARK]
    assert len(marks) == 1 and marks[0] < P  # the first record starts within one period
    return (n - marks[0]) % P, c + marks[0]


def check_batch(name, cfg, b):
    b = jax.device_get(b)
    task = TASKS[name]
    evidence = np.asarray(task.evidence(b.tokens, b.length, cfg))
    for toks, L, label, ev in zip(b.tokens, b.length, b.targets, evidence):
        assert (toks[L:] == 0).all()
        want, where = loop_truth(name, toks, int(L), cfg)
        assert int(label) == want and int(ev) == where, (name, toks, L)
        if task.rule is not None:  # the positional rule says the same in sequence positions
            assert task.targets(int(L), cfg).tolist() == [-1] * (L - 1) + [where]
    assert b.mask.all()


# jitted with the lengths traced: one program per (config, batch, Lpad), as in training
draw = jax.jit(sample_batch, static_argnums=(0, 2, 5))
draw_pair = jax.jit(sample_shift_pair, static_argnums=(0, 2, 3, 4, 5, 6))


@pytest.mark.parametrize("name", FAMILIES)
def test_labels_match_the_loop_and_pad_prefix_moves_every_relation(name):
    cfg, c = TaskConfig(name, vocab=10), 7
    shifted = replace(cfg, opts=replace(cfg.opts, pad_prefix=c))
    plain, moved = jax.device_get(draw_pair(cfg, jax.random.key(4), 64, 8, 24, 32, c))
    check_batch(name, cfg, plain)
    check_batch(name, shifted, moved)
    assert (moved.length == plain.length + c).all()
    assert (moved.tokens[:, :c] == cfg.vocab).all()  # PAD
    for a, b, L in zip(plain.tokens, moved.tokens, plain.length):
        assert (b[c:c + L] == a[:L]).all()  # the same content, moved
    assert (moved.targets == plain.targets).all()  # the label is unchanged
    ev = TASKS[name].evidence
    np.testing.assert_array_equal(ev(moved.tokens, moved.length, shifted),
                                  ev(plain.tokens, plain.length, cfg) + c)
    if name == "ordered_update":
        np.testing.assert_array_equal(distance_bin(moved.tokens, moved.length, cfg),
                                      distance_bin(plain.tokens, plain.length, cfg))


@pytest.mark.parametrize("name", FAMILIES)
def test_one_program_for_every_length_up_to_128(name):
    cfg = task_config(name, vocab=10, anchor_slot=4, copy_offset=5, period=7)
    sample = chex.assert_max_traces(lambda k, n: sample_batch(cfg, k, 24, n, n, 128), n=1)
    sample = jax.jit(sample)
    for n in (8, 21, 64, 128):
        b = sample(jax.random.key(n), n)
        assert b.tokens.shape == (24, 128) and (b.length == n).all()
        check_batch(name, cfg, b)


def test_shift_pair_checks_its_room():
    cfg = TaskConfig("offset_copy", vocab=10)
    with pytest.raises(ConfigError, match="^shift:"):
        sample_shift_pair(cfg, jax.random.key(0), 4, 8, 30, 32, 3)
    with pytest.raises(ConfigError, match="^task.name:"):
        sample_shift_pair(TaskConfig("fixed_offset"), jax.random.key(0), 4, 8, 16, 32, 3)


def test_ordered_update_covers_near_and_far():
    cfg = TaskConfig("ordered_update", vocab=10)
    train = jax.device_get(draw(cfg, jax.random.key(5), 2000, 8, 32, 128))
    dist = np.asarray(last_set_distance(train.tokens, train.length, cfg))
    far = np.asarray(distance_bin(train.tokens, train.length, cfg))
    np.testing.assert_array_equal(far, dist >= NEAR_FAR)
    assert dist.min() == 2 and set(range(2, NEAR_FAR)) <= set(dist.tolist())
    assert 0.15 < far.mean() < 0.35 and dist.max() >= 24  # far exists in training
    writes = (train.tokens == cfg.vocab + 1).sum(1)
    assert set(writes.tolist()) == {2, 3, 4}
    long = jax.device_get(draw(cfg, jax.random.key(6), 2000, 128, 128, 128))
    far = np.asarray(distance_bin(long.tokens, long.length, cfg))
    dist = np.asarray(last_set_distance(long.tokens, long.length, cfg))
    assert 0.45 < far.mean() < 0.55 and dist.max() > 100  # half far, far past training


def test_periodic_labels_at_chance_one_over_p():
    cfg = TaskConfig.of("periodic_marker", vocab=10, period=5)
    b = jax.device_get(draw(cfg, jax.random.key(7), 2000, 8, 32, 32))
    freq = np.bincount(b.targets, minlength=5) / len(b.targets)
    assert len(freq) == 5 and np.abs(freq - 0.2).max() < 0.04
    assert vocab_sizes(RunConfig(cfg)) == (13, 5)


@pytest.mark.parametrize("name", FAMILIES)
def test_one_vocabulary(name):
    assert vocab_sizes(RunConfig(TaskConfig(name, vocab=20)))[0] == 23


def run(task, lmin=8):
    return RunConfig(task, ModelConfig(query="last"), TrainConfig(lmin=lmin, lmax=32))


@pytest.mark.parametrize("task,field", [
    (TaskConfig.of("absolute_anchor", anchor_slot=7), "task.opts.anchor_slot"),
    (TaskConfig.of("absolute_anchor", anchor_slot=4, pad_prefix=3), "task.opts.anchor_slot"),
    (TaskConfig.of("offset_copy", copy_offset=8), "task.opts.copy_offset"),
    (TaskConfig.of("offset_copy", copy_offset=-1), "task.opts.copy_offset"),
    (TaskConfig.of("periodic_marker", period=8), "task.opts.period"),
    (TaskConfig.of("periodic_marker", period=1), "task.opts.period"),
    (TaskConfig("ordered_update", vocab=3), "task.vocab"),
    (TaskConfig.of("ordered_update", pad_prefix=4), "task.opts.pad_prefix"),
])
def test_validation_names_the_field(task, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        validate(run(task))


@pytest.mark.parametrize("task", [
    TaskConfig.of("absolute_anchor", anchor_slot=6), TaskConfig.of("offset_copy", copy_offset=7),
    TaskConfig.of("periodic_marker", period=7),
    TaskConfig.of("ordered_update", vocab=4, pad_prefix=3),
])
def test_validation_accepts_the_shortest_fit(task):
    validate(run(task))
