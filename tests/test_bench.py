"""`lgjax bench` finds the PyTorch reference of a checkout (a wrong path once skipped the row
silently, saying torch was not installed)."""

from __future__ import annotations

from lgjax.bench import command as bench


def test_bench_finds_the_checkouts_benchmarks_folder():
    assert (bench.BENCHMARKS / "torch_reference.py").is_file()
    assert (bench.BENCHMARKS / "bench_grid.py").is_file()
