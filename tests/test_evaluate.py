"""evaluate(): every length measured in one program, the model reading every length padded to
the longest or each at its own size, against the model reading each length alone, padded to the
longest length (the padding masked)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lgjax.rope_scaling  # noqa: F401  (registers rope_dynamic)
from lgjax import evaluate, models, tasks, train
from lgjax.keys import EVAL, seed_keys, stream
from tests.conftest import tiny
from tests.test_transformer import tiny_transformer

LENGTHS = (6, 9, 12)


def padded_reference(params_S, cfg, n_seqs):
    """Each length's sequences drawn and read by the model padded to the longest length, its
    padding masked (accuracy over the scored rows; the last query row's mean attention), in
    one jitted program per length."""
    apply = models.make_apply(cfg, forward_only=True)
    Lpad = max(LENGTHS)

    def one(params, key_data, L):
        batch = tasks.sample_batch(cfg.task, stream(key_data, EVAL, L), n_seqs, L, L, Lpad)
        logits, att = apply(params, batch.tokens, batch.length)
        correct = (jnp.argmax(logits, -1) == batch.targets) & batch.mask
        if att.ndim >= 4:
            att = att.reshape(att.shape[0], -1, Lpad, Lpad)[:, :, L - 1, :]
        return correct.sum() / batch.mask.sum(), att.mean(0)

    run = jax.jit(jax.vmap(one, in_axes=(0, 0, None)), static_argnums=2)
    keys_S = seed_keys(cfg.train.seeds)
    out = [run(params_S, keys_S, L) for L in LENGTHS]
    return (np.stack([np.asarray(a) for a, _ in out], 1),
            np.stack([np.asarray(m) for _, m in out], 1))


@pytest.mark.parametrize("cfg", [
    tiny("alibi"),  # a one-layer head's fast form, the last row scored
    tiny("rope", task="prev"),  # every row scored
    tiny("rope_dynamic"),  # the frequencies follow the sequence's own length
    tiny_transformer("rope"),  # attention per layer and head, every row
], ids=["alibi-last-row", "rope-every-row", "rope_dynamic", "transformer"])
@pytest.mark.parametrize("own_size", [False, True], ids=["padded", "own-size"])
def test_every_length_in_one_program_equals_the_padded_model(cfg, own_size):
    states = train.init_states(cfg)
    ev = evaluate.evaluate(states.params, cfg, LENGTHS, 32, own_size=own_size)
    acc, mean_att = padded_reference(states.params, cfg, 32)
    # the same sequences and the same predictions: the accuracies are equal
    np.testing.assert_array_equal(ev.accuracy, acc)
    # the attention equal up to float rounding, and zero past each row's length as padded
    np.testing.assert_allclose(ev.mean_attention, mean_att, rtol=1e-5, atol=1e-7)
    for i, L in enumerate(LENGTHS):
        assert not ev.mean_attention[:, i, :, L:].any()
    np.testing.assert_array_equal(ev.selected_offset,
                                  mean_att.argmax(-1) - (np.array(LENGTHS) - 1)[None, :, None])
