"""`python -m evals WHAT ...`: the measurements of the workloads, from a Chorus checkout.
Errors are one line and exit 2, as `chorus`'s are (`actors.cli.main.dispatch`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from actors.cli.main import OneLineParser, dispatch
from evals import relay_cli, retrieval_cli


class EvalsParser(OneLineParser):
    command = "python -m evals"


def parser() -> argparse.ArgumentParser:
    p = EvalsParser(
        prog="python -m evals",
        description="Measure a workload: retrieval against known answer files, the relay on HumanEval.",
    )
    sub = p.add_subparsers(metavar="WHAT")
    retrieval_cli.add_parser(sub)
    relay_cli.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return dispatch(parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
