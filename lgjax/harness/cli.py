"""`lgjax <command>`: parse arguments into the command's config dataclass and dispatch.

Every command is a module with a frozen `Config` dataclass: its fields (and those of its
`run: RunOptions`) are the flags, with the field's `# comment` as help. A module with `main(cfg)`
runs that; any other is a study and runs through `lgjax.harness.study.run_study`.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
import io
import os
import re
import sys
import textwrap
import tokenize

from lgjax.harness import ranges
from lgjax.harness.commands import commands

PARSERS = {"int": int, "float": float, "str": str}


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line on stderr (what and how to see the flags), exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _tuple_of(item):
    def parse(text: str) -> tuple:
        values = tuple(item(x) for x in text.split(",") if x.strip())
        if not values:  # an empty shell variable, most often: never "all" or "none"
            raise argparse.ArgumentTypeError("an empty list; give at least one value, or leave "
                                             "the option out for its default")
        return values
    return parse


def field_comments(cls) -> dict[str, str]:
    """{name: comment} of a dataclass's `name: type = default  # comment` fields (the comment
    ends the field's last line, so a long default may span lines)."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments = {t.start[0]: t.string.lstrip("#").strip() for t in tokenize.generate_tokens(
        io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    return {node.target.id: comments[node.end_lineno] for node in ast.parse(source).body[0].body
            if isinstance(node, ast.AnnAssign) and node.end_lineno in comments}


def add_fields(parser: argparse.ArgumentParser, cls, defaults) -> None:
    helps = field_comments(cls)
    for f in dataclasses.fields(cls):
        if f.name == "run":
            continue
        default, help_text = getattr(defaults, f.name), helps.get(f.name, "")
        if f.metadata.get("rest"):  # everything after `--`, taken by main() before argparse
            parser.usage = f"%(prog)s [options] -- {f.name.upper()} ..."
            parser.epilog = f"{f.name.upper()}: {help_text}"
            continue
        kind = str(f.type)
        if f.metadata.get("positional") and kind.startswith("tuple"):  # one or more
            parser.add_argument(f.name, help=help_text, nargs="+", type=str,
                                metavar=f.name.upper().removesuffix("S"))
        elif f.metadata.get("positional"):  # optional when it has a non-empty default
            parser.add_argument(f.name, help=help_text, default=default,
                                nargs="?" if default != "" else None)
        elif kind == "bool":
            parser.add_argument("--" + f.name.replace("_", "-"), default=default,
                                action=argparse.BooleanOptionalAction, help=help_text)
        else:
            item = re.fullmatch(r"tuple\[(\w+), .*\]", kind)
            parse = _tuple_of(PARSERS[item[1]]) if item else PARSERS[kind]
            shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
            metavar = f"{item[1].upper()},..." if item else kind.upper()
            parser.add_argument("--" + f.name.replace("_", "-"), type=parse, default=default,
                                metavar=metavar, help=f"{help_text} (default: {shown!s:.60})"
                                if shown != "" else help_text)


def split_rest(argv: list[str]) -> tuple[list[str], list[str]]:
    """argv before and after the first `--` (the rest is another command line, left whole)."""
    return (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])


def build_config(module, args, rest: list[str] = ()):
    cls = module.Config
    values = {f.name: tuple(rest) if f.metadata.get("rest") else getattr(args, f.name)
              for f in dataclasses.fields(cls) if f.name != "run"}
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}  # nargs="+"
    if any(f.name == "run" for f in dataclasses.fields(cls)):
        run_cls = type(cls().run)
        values["run"] = run_cls(**{f.name: getattr(args, f.name)
                                   for f in dataclasses.fields(run_cls)})
    cfg = cls(**values)
    ranges.check(cfg)  # every number within its declared range, before any work
    return cfg


def plugins_in(argv: list[str]) -> list[str]:
    """The --plugin modules anywhere before a `--` (what follows it is another command line)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--plugin", action="append", default=[])
    return pre.parse_known_args(split_rest(argv)[0])[0].plugin


def parser_for(argv: list[str]) -> tuple[argparse.ArgumentParser, object | None]:
    """The top parser; flags are added only for the command named in argv (fast --help)."""
    parser = OneLineParser(prog="lgjax", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (also LGJAX_DEBUG=1)")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help=PLUGIN_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    every = commands()
    chosen = next((a for a in argv if a in every), None)
    module = None
    for name, command in every.items():
        p = sub.add_parser(name, help=command.help, description=command.help)
        p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                       help=PLUGIN_HELP)
        if name == chosen:
            module = importlib.import_module(command.module)
            defaults = module.Config()
            add_fields(p, module.Config, defaults)
            if hasattr(defaults, "run"):
                add_fields(p, type(defaults.run), defaults.run)
    return parser, module


PLUGIN_HELP = ("a module to import first (repeatable): it registers encodings or tasks "
               "(lgjax.register_encoding, lgjax.register_task); runs record it")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    every = commands()
    if len(argv) >= 2 and f"{argv[0]}-{argv[1]}" in every:  # `lgjax contract lab` spelling
        argv = [f"{argv[0]}-{argv[1]}", *argv[2:]]
    from lgjax.errors import EXPECTED, Preempted, one_line, runtime_failure

    debug = "--debug" in split_rest(argv)[0] or os.environ.get("LGJAX_DEBUG") == "1"
    command = next((a for a in argv if a in every), "")
    try:
        from lgjax import plugins

        plugins.load(plugins_in(argv))  # before the command's module and its defaults
        parser, module = parser_for(argv)
        rest = []
        if module is not None and any(f.metadata.get("rest") for f in dataclasses.fields(
                module.Config)):
            argv, rest = split_rest(argv)
        args = parser.parse_args(argv)
        from lgjax.runtime import (
            enable_compile_cache,
            maybe_initialize_distributed,
            split_cpu_into_devices,
        )

        cfg = build_config(module, args, rest)
        split_cpu_into_devices()
        maybe_initialize_distributed()
        from lgjax import preemption

        preemption.install()  # after joining the job: replaces jax.distributed's SIGTERM handler
        enable_compile_cache()
        if hasattr(module, "main"):
            code = module.main(cfg)
            if isinstance(code, int):  # a command that reports its own exit status
                return code
        else:
            from lgjax.harness.study import run_study

            run_study(module.STUDY, cfg)
    except Preempted as err:
        print(f"lgjax {command}: {err} (exit {err.exit_code})", file=sys.stderr)
        from lgjax import preemption

        preemption.leave_job(err.exit_code)  # (a job of several processes exits there)
        return err.exit_code
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"lgjax {command}: interrupted; every committed checkpoint is kept (rerun with "
              "--resume to continue)", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 -- only the expected kinds become one line
        failure = ((one_line(err), getattr(err, "exit_code", 2)) if isinstance(err, EXPECTED)
                   else runtime_failure(err))
        if debug or failure is None:
            raise
        print(f"lgjax {command}: {failure[0]}".replace("lgjax : ", "lgjax: "), file=sys.stderr)
        return failure[1]
    return 0


if __name__ == "__main__":
    sys.exit(main())
