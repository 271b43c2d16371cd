"""Where the Table-1 workload's wall time goes besides the training arithmetic (see
lgjax/bench/fixed_costs.py; `lgjax bench` prints the same rows at the default 4000 steps).

    python benchmarks/bench_fixed_costs.py [STEPS] [--cold]   # default 4000; --cold: empty cache
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lgjax.bench import fixed_costs  # noqa: E402
from lgjax.runtime import enable_compile_cache  # noqa: E402

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    enable_compile_cache()
    print("\n".join(fixed_costs.format_lines(
        fixed_costs.measure(int(args[0]) if args else 4000, "--cold" in sys.argv))))
