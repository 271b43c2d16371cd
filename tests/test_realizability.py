"""The training-free realizability score: properties the theory fixes, not numbers."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lgjax.config import ConfigError
from lgjax.studies.realizability import alpha as RA
from lgjax.studies.realizability import score as R

L0, LENGTHS, LMAX = 20, (30, 40, 60), 60
TASKS = ("prev", "skip-2", "skip-3", "skip-5", "copy", "reverse", "first", "pos-2", "pos-5")


def _targets(tasks=TASKS):
    t = np.stack([R.targets(n, L0) for n in tasks])
    rows = np.stack([R.row_sets(n, L0, LENGTHS, LMAX) for n in tasks])
    return jnp.asarray(t), jnp.asarray(rows)


@pytest.fixture(scope="module")
def reference():
    """{encoding: {task: (acc@L0, alpha per L)}} under the pinned selection, num 16, base 1e4."""
    t, rows = _targets()
    theta = jnp.asarray(R.frequencies(16))[None]
    out = {}
    for enc, head in R.HEADS.items():
        res = R.reference_family(enc, head.shape(16, L0), R.Recipe(), theta, t, rows)
        frac = np.asarray(res["frac"][0])
        ce = (np.asarray(res["ce_start"][0]), np.asarray(res["ce_end"][0]))
        out[enc] = {n: (frac[k, 0], frac[k, 1:], ce[0][k], ce[1][k]) for k, n in enumerate(TASKS)}
    return out


def test_rope_carries_fixed_relative_offsets_to_every_length(reference):
    for task in ("prev", "skip-2", "skip-3", "skip-5"):
        acc, alpha, _, _ = reference["rope"][task]
        assert acc == 1.0 and np.all(alpha == 1.0), (task, acc, alpha)


def test_clamped_table_carries_absolute_slots_not_offsets(reference):
    for task in ("first", "pos-2", "pos-5"):
        acc, alpha, _, _ = reference["ape"][task]
        assert acc == 1.0 and np.all(alpha == 1.0), (task, alpha)
    for task in ("prev", "skip-2", "skip-3", "skip-5"):
        acc, alpha, _, _ = reference["ape"][task]
        # realized in range; past L0 the target and the query share the clamped column: a tie
        assert acc == 1.0 and np.all(alpha == 0.0), (task, alpha)


def test_growing_offsets_are_not_carried(reference):
    for task in ("copy", "reverse"):
        scored = (R.row_sets(task, L0, LENGTHS, LMAX)[1:] >= 0).sum(1)  # new rows with a target
        # every new row reads the one clamped table row; a growing-offset target hits its
        # argmax column for at most one row per length
        assert np.all(reference["ape"][task][1] <= 1.0 / scored + 1e-6)
        for enc in ("nope", "alibi"):
            assert np.all(reference[enc][task][1] == 0.0)
    # RoPE fits the copy offset L0/2; every new row still sees that offset, which outscores L/2
    assert np.all(reference["rope"]["copy"][1] == 0.0)


def test_nope_and_alibi_realize_nothing_and_are_flagged(reference):
    for enc in ("nope", "alibi"):
        for task in TASKS:
            acc, alpha, _, _ = reference[enc][task]
            assert acc < 1.0 and np.all(alpha == 0.0), (enc, task, acc, alpha)


def test_reference_fit_lowers_the_cross_entropy(reference):
    for enc, task in [("rope", "prev"), ("ape", "first"), ("sinusoidal", "pos-2"),
                      ("rope", "copy"), ("alibi", "prev")]:
        _, _, ce_start, ce_end = reference[enc][task]
        assert ce_end < ce_start, (enc, task, ce_start, ce_end)


@settings(deadline=None, max_examples=15)
@given(enc=st.sampled_from(sorted(R.HEADS)), seed=st.integers(0, 2**31 - 1))
def test_old_rows_keep_their_argmax_for_any_head(enc, seed):
    head = R.HEADS[enc]
    shape = head.shape(8, L0)
    rng = np.random.default_rng(seed)
    w = jnp.asarray(np.abs(rng.normal(size=shape)) if head.nonneg else rng.normal(size=shape),
                    jnp.float32)
    theta = jnp.asarray(R.frequencies(8))
    S0, SL = head.kernel(w, L0, theta), head.kernel(w, LMAX, theta)
    chex.assert_trees_all_close(SL[:L0, :L0], S0, rtol=1e-5, atol=1e-5)
    t = np.array([rng.integers(0, i + 1) for i in range(L0)])  # any causal target per row
    old = np.pad(t, (0, LMAX - L0), constant_values=-1)
    np.testing.assert_array_equal(R.hits(SL, jnp.asarray(old), 1e-6)[:L0],
                                  R.hits(S0, jnp.asarray(t), 1e-6))


def test_ties_and_near_ties_count_as_misses():
    S = jnp.zeros((4, 4))
    S = S.at[1, 0].set(2.0).at[1, 1].set(2.0)  # exact tie with the query
    S = S.at[2, 0].set(2.0).at[2, 2].set(2.0 - 5e-7)  # within 1e-6 of the max
    S = S.at[3, 0].set(2.0).at[3, 2].set(2.0 - 1e-4).at[2, 3].set(9.0)  # clear win; j > i unseen
    t = jnp.array([-1, 0, 0, 0])
    np.testing.assert_array_equal(R.hits(S, t, 1e-6), [False, False, False, True])
    np.testing.assert_allclose(R.fractions(S, t[None], 1e-6), [1 / 3])


def test_coupled_weight_decay_is_torch_adam():
    r = R.Recipe()
    rng = np.random.default_rng(0)
    w, g1, g2 = (jnp.asarray(rng.normal(size=(3, 4)), jnp.float32) for _ in range(3))
    opt = R.reference_optimizer(r)
    state = opt.init(w)
    u1, state = opt.update(g1, state, w)
    w1 = optax.apply_updates(w, u1)
    u2, _ = opt.update(g2, state, w1)

    def torch_adam(params, grads, lr=0.1, wd=1e-4, b1=0.9, b2=0.999, eps=1e-8):
        m = v = 0.0
        for step, (p, g) in enumerate(zip(params, grads), start=1):
            d = g + wd * p  # torch Adam(weight_decay=wd): the decay enters the moments
            m, v = b1 * m + (1 - b1) * d, b2 * v + (1 - b2) * d * d
            upd = -lr * (m / (1 - b1**step)) / (jnp.sqrt(v / (1 - b2**step)) + eps)
        return upd

    chex.assert_trees_all_close(u1, torch_adam([w], [g1]), rtol=1e-5, atol=1e-7)
    chex.assert_trees_all_close(u2, torch_adam([w, w1], [g1, g2]), rtol=1e-5, atol=1e-7)
    decoupled = optax.adamw(0.1, weight_decay=1e-4)
    u_dec, _ = decoupled.update(g1, decoupled.init(w), w)
    assert not np.allclose(u1, u_dec, rtol=0, atol=1e-9)  # the test tells the two apart


def test_ablation_solvers_on_known_cases():
    """Learned-abs has one free entry per (row, key): every task interpolates exactly and has a
    margin-1 solution; NoPE has none; the row-space reduction leaves the margin solution."""
    with jax.enable_x64(True):
        theta = jnp.asarray(R.frequencies(16))
        X = {e: np.asarray(R.design(R.HEADS[e], R.HEADS[e].shape(16, L0), theta, L0))
             for e in ("ape", "nope", "sinusoidal")}
    t = R.targets("skip-3", L0)
    w, resid = R.min_norm_fit(X["ape"], t, 1e-6)
    assert resid < 1e-10
    w, margin = R.margin_fit(X["ape"], t, nonneg=False)
    assert abs(margin - 1.0) < 1e-8
    assert R.margin_fit(X["nope"], t, nonneg=False)[1] < 1.0
    V = R.row_space(X["sinusoidal"], False, 1e-12)
    w_full, m_full = R.margin_fit(X["sinusoidal"], t, nonneg=False)
    u, m_red = R.margin_fit(X["sinusoidal"] @ V, t, nonneg=False)
    np.testing.assert_allclose(V @ u, w_full, atol=1e-6 * np.abs(w_full).max())
    assert abs(m_full - 1.0) < 1e-6 and abs(m_red - 1.0) < 1e-6


def test_task_names_and_config_errors():
    assert R.task_config("skip-3").opts.offset == 3 and R.task_config("pos-5").opts.slot == 5
    assert not R.positional("induction")
    for bad in (RA.Config(tasks=("skipp-2",)), RA.Config(tasks=("prev-2",)),
                RA.Config(encodings=("t5",)), RA.Config(lengths=(20,)),
                RA.Config(L0=5, tasks=("pos-5",))):
        with pytest.raises(ConfigError):
            RA.check(bad)


def test_study_driver_end_to_end(tmp_path):
    cfg = RA.Config(encodings=("rope", "alibi"), tasks=("prev", "copy", "induction"),
                    lengths=(30, 40), focus_length=40, sweep_nums=(8,), sweep_bases=(1e4,),
                    sweep_scales=(0.1,), min_norm_rconds=(1e-8,), steps=60,
                    out=str(tmp_path))
    assert RA.runs(cfg) == {}
    res = RA.measure(cfg, {})
    rows = {(r["encoding"], r["task"], r["selection"]): r for r in res["rows"] if r["main"]}
    assert rows["rope", "prev", "reference"]["alpha"] == [1.0, 1.0]
    assert rows["rope", "prev", "margin"]["alpha"] == [1.0, 1.0]
    assert rows["alibi", "induction", "lbfgs"]["flags"] == ["content-dependent: alpha := 0"]
    assert "not realized at L0" in rows["alibi", "prev", "reference"]["flags"]
    sweep = [r for r in res["rows"] if r["encoding"] == "rope" and not r["main"]]
    assert {(r["num"], r["scale"]) for r in sweep} == {(8, 1.0), (16, 0.1)}
    text = RA.table(res)
    assert "rope" in text and "alpha_40" in text
    RA.figure(res, tmp_path / "alpha")
    assert (tmp_path / "alpha.png").stat().st_size > 0


def test_report_figures_keep_every_title_inside_the_canvas(tmp_path, monkeypatch):
    """The published grid's shape (5 encodings x 10 tasks, one tier): at equal aspect the
    heatmap titles were laid out above the figure's top edge, cut off in the PNG."""
    from lgjax.studies.realizability import figures

    encs = ("ape", "nope", "alibi", "sinusoidal", "rope")
    tasks = TASKS + ("induction",)
    cells = [dict(tier="1L1H", encoding=e, task=t, L=L, alpha=0.5, lg=0.5, train_acc=1.0)
             for e in encs for t in tasks for L in (30, 60)]
    result = dict(cells=cells, tiers=["1L1H"], alpha=True, thresholds={"learnable": 0.9},
                  stats={"1L1H": dict(rho=0.9, rho_ci=[0.8, 0.95], precision=0.95,
                                      precision_ci=[0.9, 1.0])})
    outside = {}

    def checked_save(fig, stem):
        fig.tight_layout()
        fig.draw_without_rendering()  # lays the text out as saving would
        box = fig.bbox
        for ax in fig.axes:
            t = ax.title.get_window_extent()
            if ax.get_title() and not (t.y1 <= box.y1 + 0.5 and t.x0 >= -0.5
                                       and t.x1 <= box.x1 + 0.5):
                outside.setdefault(stem.name, []).append(ax.get_title())

    monkeypatch.setattr(figures, "save", checked_save)
    written = figures.draw(result, tmp_path, 60)
    assert len(written) == 4
    assert outside == {}
