"""Why RoPE extrapolates and learned absolute positions pin (docs/studies/implicit-bias.md).

Commands (one module each, a `Config` and the study hooks): the published figures and tables
(multiseed, shift, prop1, mechanics, frequency, linear, variants, maxmargin, transformer) and the
checkpoint trajectory analyzer (dynamics). Measurements: analysis (pure metrics), selector (the
attention-SVM solution), dynamics; figures, tables; claims (the readers of implicit-bias.json).
"""

from lgjax.harness.declare import Command, StudyDeclaration

_ = f"{__name__}."
STUDY = StudyDeclaration(
    name="implicit-bias",
    package=__name__,
    commands={
        "multiseed": Command(_ + "multiseed", "RoPE vs APE accuracy/peak/offset vs length"),
        "shift": Command(_ + "shift", "mean attention in relative vs absolute coordinates"),
        "prop1": Command(_ + "prop1", "carrier fractions, carrier profile, decay law"),
        "mechanics": Command(_ + "mechanics", "margin bound, dynamics, APE pin, sweeps"),
        "frequency": Command(_ + "frequency", "rotary base sweep: kernel ratios, selection"),
        "linear": Command(_ + "linear", "linear-attention control vs the softmax head"),
        "variants": Command(_ + "variants", "ALiBi/T5/RoPE, content-conditioned, heads"),
        "maxmargin": Command(_ + "maxmargin", "trained W vs the attention-SVM selector"),
        "transformer": Command(_ + "transformer", "2-layer decoder on the shift task"),
        "dynamics": Command(_ + "dynamics", "metrics over training, read from a run's checkpoints"),
    },
    experiments=("multiseed", "shift", "prop1", "frequency", "linear", "variants", "mechanics",
                 "maxmargin", "transformer"),
    # the longest at --quick (docs/results/performance.md, the measurements behind the defaults)
    longest_first=("mechanics", "variants", "transformer", "maxmargin"),
    claims="implicit-bias.json",
    readers=_ + "claims",
    quick={
        "maxmargin": {"n_seqs": 32, "iters": 300, "analyze_steps": (0, 64, 300)},
        "mechanics": {"ape_seeds": 1, "dyn_eval": 64},
        # its steps outweigh its compilation even here: XLA's defaults
        "transformer": {"d": 64, "run": {"seeds": 1, "fast_compile": False}},
    },
    # the reference 8000 steps at batch 256 are for accelerators; the width stays the
    # reference's, since below it some seeds' RoPE accuracy at 48 falls under 0.95, the
    # expectation's level (experiments/transformer_recipe.py)
    on_cpu={"transformer": {"run": {"steps": 1000, "batch": 64, "eval_sequences": 256}}},
)
