"""PyTorch eager reference of lgjax's one-layer attention head and Adam step.

Written the plain way (nn.Module, full projections of every position, torch.optim.Adam) so the
benchmark can compare its speed against the JAX implementation. Task: fixed offset retrieval --
sequences of length L ~ U[lmin, lmax] padded to lmax, query at n = L-1, label s[L-1-K].
Encodings: "ape" (learned absolute table, 64 rows) and "rope" (rotary on q and k).
"""

from __future__ import annotations

import argparse
import math
import os
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:  # the benchmark checks available() first
    torch = nn = F = None

MAX_POS = 64


def available() -> bool:
    return torch is not None


def torch_version() -> str:
    return torch.__version__ if torch is not None else "unavailable"


def _rotate(x, cos, sin):
    """Rotate consecutive pairs (x[2i], x[2i+1]) by angle t * theta_i; x is (B, L, d)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class Head(nn.Module if nn is not None else object):
    """One attention head, H=1, reading out vocab logits at the last real position."""

    def __init__(self, encoding: str, d: int, vocab: int):
        super().__init__()
        if encoding not in ("rope", "ape"):
            raise ValueError(f"unknown encoding {encoding!r}")
        self.encoding, self.d = encoding, d
        self.E = nn.Embedding(vocab, d)
        self.W_Q = nn.Linear(d, d, bias=False)
        self.W_K = nn.Linear(d, d, bias=False)
        self.W_V = nn.Linear(d, d, bias=False)
        self.U = nn.Linear(d, vocab, bias=False)
        if encoding == "ape":
            self.P = nn.Embedding(MAX_POS, d)
        else:
            theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
            angles = torch.arange(MAX_POS, dtype=torch.float32)[:, None] * theta
            self.register_buffer("cos", angles.cos())
            self.register_buffer("sin", angles.sin())

    def forward(self, tokens, n):
        B, Lp = tokens.shape
        z = self.E(tokens)
        if self.encoding == "ape":
            z = z + self.P.weight[:Lp]
        q, k, v = self.W_Q(z), self.W_K(z), self.W_V(z)
        if self.encoding == "rope":
            q = _rotate(q, self.cos[:Lp], self.sin[:Lp])
            k = _rotate(k, self.cos[:Lp], self.sin[:Lp])
        q_n = q[torch.arange(B), n]  # (B, d)
        logits = torch.einsum("bd,btd->bt", q_n, k) / math.sqrt(self.d)
        pad = torch.arange(Lp)[None, :] > n[:, None]
        a = logits.masked_fill(pad, float("-inf")).softmax(dim=-1)
        o = torch.einsum("bt,btd->bd", a, v)
        return self.U(o)


def sample(batch: int, vocab: int, K: int, lmin: int, lmax: int):
    """Fresh batch from torch's global RNG: tokens (B, lmax), query index n (B,), labels (B,)."""
    L = torch.randint(lmin, lmax + 1, (batch,))
    tokens = torch.randint(0, vocab, (batch, lmax))
    tokens = tokens.masked_fill(torch.arange(lmax)[None, :] >= L[:, None], 0)
    n = L - 1
    return tokens, n, tokens[torch.arange(batch), n - K]


def _setup(encoding, d, vocab, threads, seed):
    torch.set_num_threads(threads or os.cpu_count())
    torch.manual_seed(seed)
    model = Head(encoding, d, vocab)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def _step(model, opt, batch, vocab, K, lmin, lmax):
    tokens, n, y = sample(batch, vocab, K, lmin, lmax)
    loss = F.cross_entropy(model(tokens, n), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def time_steps(
    encoding: str,
    steps: int = 50,
    warmup: int = 5,
    batch: int = 256,
    d: int = 64,
    vocab: int = 20,
    K: int = 1,
    lmin: int = 8,
    lmax: int = 16,
    threads: int | None = None,
    seed: int = 0,
) -> float:
    """Mean milliseconds per training step (sampling + forward + backward + Adam) over `steps`."""
    model, opt = _setup(encoding, d, vocab, threads, seed)
    for _ in range(warmup):
        _step(model, opt, batch, vocab, K, lmin, lmax)
    t0 = time.perf_counter()
    for _ in range(steps):
        _step(model, opt, batch, vocab, K, lmin, lmax)
    return (time.perf_counter() - t0) / steps * 1e3


def train_and_eval(
    encoding: str,
    steps: int = 4000,
    seed: int = 0,
    eval_lengths=(12, 16, 20, 24, 32, 40, 48),
    n_eval: int = 4096,
    batch: int = 256,
    d: int = 64,
    vocab: int = 20,
    K: int = 1,
    lmin: int = 8,
    lmax: int = 16,
    threads: int | None = None,
) -> dict[int, float]:
    """Train one seed for `steps` steps, then accuracy on n_eval sequences of each exact length."""
    model, opt = _setup(encoding, d, vocab, threads, seed)
    for _ in range(steps):
        _step(model, opt, batch, vocab, K, lmin, lmax)
    acc = {}
    with torch.no_grad():
        for L in eval_lengths:
            tokens, n, y = sample(n_eval, vocab, K, L, L)
            acc[L] = (model(tokens, n).argmax(-1) == y).float().mean().item()
    return acc


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--train", action="store_true", help="also train RoPE and print accuracies")
    args = ap.parse_args()
    print(f"torch {torch_version()}, threads={args.threads or os.cpu_count()}")
    for enc in ("rope", "ape"):
        ms = time_steps(enc, steps=args.steps, threads=args.threads)
        print(f"{enc}: {ms:.3f} ms/step")
    if args.train:
        t0 = time.perf_counter()
        acc = train_and_eval("rope", threads=args.threads)
        print("rope accuracy:", {L: round(a, 4) for L, a in acc.items()})
        print(f"train_and_eval wall time: {time.perf_counter() - t0:.1f} s")
