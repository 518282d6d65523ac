"""Measurements of the workloads, outside the product: nothing under `actors/` imports this
package (an import-linter contract, `.importlinter`), and the wheel does not carry it. Run
from a Chorus checkout:

    .venv/bin/python -m evals retrieval QUESTIONS.json --root PATH   recall@1/5/10 and MRR per retrieval method
    .venv/bin/python -m evals relay [--problems 0-39]                HumanEval pass@1: one builder call vs the relay

    retrieval.py, retrieval_cli.py   the code-question workload's rankers against gold files
    humaneval.py, relay_cli.py       the relay (seed 004) on HumanEval, judged by its hidden tests
    __main__.py                      the command line (`python -m evals --help`)

Figures and the exact commands are in BENCHMARKS.md.
"""

__all__ = ["humaneval", "relay_cli", "retrieval", "retrieval_cli"]
