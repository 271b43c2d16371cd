import jax
import numpy as np
import pytest

from lgjax.config import ConfigError, RunConfig, TaskConfig, TrainConfig
from lgjax.tasks import TASKS, sample_batch
from lgjax.validation import validate
from tests.conftest import task_config


def expected_target_positions(name, toks, L, K, slot=2):
    """Independent (numpy, loop) statement of each per-row rule: {row: target position}."""
    half = L // 2
    rules = {
        "shift": lambda i: i - K if i >= K else None,
        "skip": lambda i: i - K if i >= K else None,
        "prev": lambda i: i - 1 if i >= 1 else None,
        "first": lambda i: 0 if i >= 1 else None,
        "pos": lambda i: slot if i > slot else None,
        "copy": lambda i: i - half if i >= half else None,
        "reverse": lambda i: L - 1 - i if i >= half else None,
    }
    if name == "induction":
        out = {}
        for i in range(L):
            prev = [j for j in range(i) if toks[j] == toks[i]]
            out[i] = prev[-1] + 1 if prev else None
        return out
    return {i: rules[name](i) for i in range(L)}


@pytest.mark.parametrize("name", [n for n, t in TASKS.items() if t.rows == "all"])
def test_per_row_labels_correct_by_construction(name):
    cfg = task_config(name, vocab=5, offset=2, slot=3)
    b = jax.device_get(sample_batch(cfg, jax.random.key(3), 64, 5, 12, 14))
    for toks, L, tgt, mask in zip(b.tokens, b.length, b.targets, b.mask):
        assert (toks[L:] == 0).all() and not mask[L:].any()
        for i, t in expected_target_positions(name, toks, int(L), 2, 3).items():
            assert mask[i] == (t is not None), (name, i)
            if t is not None:
                assert t <= i and tgt[i] == toks[t]


def test_fixed_offset_label_is_token_K_before_query():
    cfg = TaskConfig.of("fixed_offset", vocab=20, offset=3)
    b = jax.device_get(sample_batch(cfg, jax.random.key(0), 256, 8, 16, 16))
    assert b.length.min() >= 8 and b.length.max() <= 16 and len(set(b.length)) > 4
    for toks, L, tgt in zip(b.tokens, b.length, b.targets):
        assert tgt == toks[L - 1 - 3] and (toks[L:] == 0).all()
    assert b.mask.all()
    # tokens roughly uniform over the vocabulary
    counts = np.bincount(np.concatenate([t[:L] for t, L in zip(b.tokens, b.length)]), None, 20)
    assert counts.min() > 0.5 * counts.mean()


def test_two_offset_mode_token_picks_offset():
    cfg = TaskConfig.of("two_offset", vocab=10, offset=1, offset2=3)
    b = jax.device_get(sample_batch(cfg, jax.random.key(1), 256, 6, 12, 12))
    modes = []
    for toks, L, tgt in zip(b.tokens, b.length, b.targets):
        mode = toks[L - 1] - 10
        assert mode in (0, 1) and (toks[: L - 1] < 10).all()
        assert tgt == toks[L - 1 - (3 if mode else 1)]
        modes.append(mode)
    assert 0.3 < np.mean(modes) < 0.7


def test_offset_not_shorter_than_sequence():
    cfg = RunConfig(TaskConfig.of("fixed_offset", offset=8), train=TrainConfig(lmin=8, lmax=16))
    with pytest.raises(ConfigError, match="task.opts.offset"):
        validate(cfg)


def test_same_key_same_batch():
    cfg = TaskConfig("induction", vocab=4)
    a = sample_batch(cfg, jax.random.key(7), 8, 4, 9, 9)
    b = sample_batch(cfg, jax.random.key(7), 8, 4, 9, 9)
    assert all((x == y).all() for x, y in zip(a, b))


@pytest.mark.parametrize("name", [n for n, t in TASKS.items() if t.rows == "all"])
@pytest.mark.parametrize("L", [5, 20, 31])
def test_targets_rule_is_the_sampler_rule(name, L):
    """`targets(length)` (used by the training-free scores) agrees with the loop statement."""
    cfg = task_config(name, vocab=5, offset=2, slot=3)
    got = TASKS[name].targets(L, cfg)
    assert got.shape == (L,)
    if name == "induction":  # content-dependent: no positional rule
        assert (got == -1).all()
        return
    want = expected_target_positions(name, None, L, 2, 3)
    assert got.tolist() == [-1 if want[i] is None else want[i] for i in range(L)]


def test_last_row_task_targets_only_the_query():
    got = TASKS["fixed_offset"].targets(10, TaskConfig.of("fixed_offset", offset=3))
    assert got.tolist() == [-1] * 9 + [6]
