"""`lgjax <command>`: parse arguments, build the experiment's config, dispatch. Nothing else."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys

from lgjax.config import ConfigError


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


def _strs(text: str) -> tuple[str, ...]:
    return tuple(x for x in text.split(",") if x)


def _multiseed_parser(sub) -> None:
    p = sub.add_parser("multiseed", help="RoPE vs APE accuracy/peak/offset vs length (Table 1)")
    p.add_argument("--encodings", type=_strs, default=("rope", "ape"))
    p.add_argument("--K", type=int, default=1)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--train-lengths", type=_ints, default=(8, 16))
    p.add_argument("--eval-lengths", type=_ints, default=(12, 16, 20, 24, 32, 40, 48))
    p.add_argument("--eval-sequences", type=int, default=4096)
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--vocab", type=int, default=20)
    p.add_argument("--out", default="results/multiseed")
    p.add_argument("--ckpt-root", default="checkpoints")
    p.add_argument("--run-name", default="")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--devices", type=int, default=0,
                   help="devices to split the seeds over (default 0: all that divide --seeds)")


def _multiseed(args) -> None:
    from lgjax.experiments import multiseed

    if len(args.train_lengths) != 2:
        raise ConfigError("--train-lengths: give two numbers LMIN,LMAX, e.g. 8,16")
    multiseed.run(multiseed.MultiseedConfig(
        encodings=args.encodings, K=args.K, seeds=args.seeds, steps=args.steps,
        batch=args.batch, train_lengths=args.train_lengths, eval_lengths=args.eval_lengths,
        n_eval=args.eval_sequences, d=args.d, heads=args.heads, vocab=args.vocab, out=args.out,
        ckpt_root=args.ckpt_root, run_name=args.run_name, resume=args.resume,
        progress=not args.no_progress, devices=args.devices))


def _transformer_parser(sub) -> None:
    p = sub.add_parser("transformer", help="2-layer decoder on the full-sequence shift task")
    p.add_argument("--encodings", type=_strs, default=("rope", "ape"))
    p.add_argument("--K", type=int, default=3)
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--steps", type=int, default=8000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d", type=int, default=192)
    p.add_argument("--vocab", type=int, default=20)
    p.add_argument("--train-lengths", type=_ints, default=(8, 16))
    p.add_argument("--eval-lengths", type=_ints, default=(12, 16, 24, 32, 48))
    p.add_argument("--profile-lengths", type=_ints, default=(16, 48))
    p.add_argument("--eval-sequences", type=int, default=1024)
    p.add_argument("--out", default="results/transformer")
    p.add_argument("--ckpt-root", default="checkpoints")
    p.add_argument("--run-name", default="")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--devices", type=int, default=0)


def _transformer(args) -> None:
    from lgjax.experiments import transformer

    if len(args.train_lengths) != 2:
        raise ConfigError("--train-lengths: give two numbers LMIN,LMAX, e.g. 8,16")
    transformer.run(transformer.TransformerConfig(
        encodings=args.encodings, K=args.K, seeds=args.seeds, steps=args.steps,
        batch=args.batch, lr=args.lr, layers=args.layers, heads=args.heads, d=args.d,
        vocab=args.vocab, train_lengths=args.train_lengths, eval_lengths=args.eval_lengths,
        profile_lengths=args.profile_lengths, n_eval=args.eval_sequences, out=args.out,
        ckpt_root=args.ckpt_root, run_name=args.run_name, resume=args.resume,
        progress=not args.no_progress, devices=args.devices))


def _dynamics_parser(sub) -> None:
    p = sub.add_parser("dynamics", help="metrics over training, read from a run's checkpoints")
    p.add_argument("run_dir", help="a run directory (holds config.json and step folders)")
    p.add_argument("--lengths", type=_ints, default=(16, 48))
    p.add_argument("--eval-sequences", type=int, default=1024)
    p.add_argument("--out", default="", help="default: <run_dir>/dynamics")


def _dynamics(args) -> None:
    from pathlib import Path

    from lgjax import dynamics, plots

    cfg, rows = dynamics.analyze(args.run_dir, args.lengths, args.eval_sequences)
    out = Path(args.out or Path(args.run_dir) / "dynamics")
    dynamics.write(rows, out)
    heads = [f"/h{h}" for h in range(cfg.model.heads)]
    L = max(args.lengths)
    metrics = [f"{m}{h}" for h in heads for m in ("carrier_key", "carrier_query", "sv_energy",
                                                  "align_shifted")]
    metrics += [f"margin{heads[0]}@{L}", f"accuracy@{L}", f"peak_height{heads[0]}@{L}",
                f"selected_offset{heads[0]}@{L}"]
    metrics += [m for m in ("ape_norm_in_range", "ape_norm_beyond")
                if any(r["metric"] == m for r in rows)]
    plots.dynamics_figure(rows, metrics, out / "dynamics", title=str(args.run_dir))
    print(dynamics.summary_table(rows, metrics))
    print(f"wrote {out}/dynamics.csv, dynamics.json, dynamics.png/.pdf ({len(rows)} rows)")


def _bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="speed of the multi-seed step vs the alternatives")
    p.add_argument("--steps", type=int, default=200, help="timed steps per measurement")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch reference")
    p.add_argument("--no-table1", action="store_true", help="skip the end-to-end Table-1 run")
    p.add_argument("--out", default="results/bench")


def _bench(args) -> None:
    from lgjax import bench

    bench.main(steps=args.steps, torch=not args.no_torch, table1=not args.no_table1,
               out=args.out)


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(",") if x)


FIELD_TYPES = {"int": int, "float": float, "str": str, "tuple[int, ...]": _ints,
               "tuple[int, int]": _ints, "tuple[float, ...]": _floats, "tuple[str, ...]": _strs}


def _from_dataclass(name: str, module: str, config: str, help_text: str):
    """Parser and dispatcher for an experiment whose flags are its config's fields."""

    def config_cls():
        return getattr(importlib.import_module(f"lgjax.experiments.{module}"), config)

    def make_parser(sub) -> None:
        p = sub.add_parser(name, help=help_text)
        for f in dataclasses.fields(config_cls()):
            flag = "--" + f.name.replace("_", "-")
            if f.type == "bool":
                p.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
            else:
                p.add_argument(flag, type=FIELD_TYPES[f.type], default=f.default)

    def dispatch(args) -> None:
        cls = config_cls()
        importlib.import_module(f"lgjax.experiments.{module}").run(
            cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls)}))

    return make_parser, dispatch


COMMANDS = {"multiseed": (_multiseed_parser, _multiseed),
            "transformer": (_transformer_parser, _transformer),
            "dynamics": (_dynamics_parser, _dynamics),
            "bench": (_bench_parser, _bench),
            "prop1": _from_dataclass("prop1", "prop1", "Prop1Config",
                                     "carrier fractions, carrier profile, decay law; K=1,2,3"),
            "frequency": _from_dataclass("frequency", "frequency", "FrequencyConfig",
                                         "rotary base sweep: kernel ratios, OOD accuracy"),
            "shift": _from_dataclass("shift", "shift", "ShiftConfig",
                                     "attention in relative vs absolute coordinates"),
            "linear": _from_dataclass("linear", "linear", "LinearConfig",
                                      "linear-attention control vs the softmax head"),
            "maxmargin": _from_dataclass("maxmargin", "maxmargin", "MaxMarginConfig",
                                         "trained W vs the attention-SVM selector"),
            "variants": _from_dataclass("variants", "variants", "VariantsConfig",
                                        "ALiBi/T5/RoPE, content-conditioned, carrier peaks, heads"),
            "mechanics": _from_dataclass("mechanics", "mechanics", "MechanicsConfig",
                                         "margin bound, dynamics, APE pin vs decay, sweeps")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lgjax", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for make_parser, _ in COMMANDS.values():
        make_parser(sub)
    args = parser.parse_args(argv)
    from lgjax.runtime import enable_compile_cache, maybe_initialize_distributed

    maybe_initialize_distributed()
    enable_compile_cache()
    try:
        COMMANDS[args.command][1](args)
    except ConfigError as err:
        print(f"lgjax {args.command}: configuration error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
