"""`chorus --help` and a bad-input error stay fast: the CLI imports a verb's heavy libraries
only when that verb runs. Importing `actors.cli.main` and building its parser (which loads
every workload's run kind, tools and agents) must import none of HEAVY; checked in a fresh
interpreter's `sys.modules`, so a top-level import added anywhere the CLI pulls in fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Each costs from 0.1 s (psycopg) to seconds (ray, torch) of imports per `chorus` process.
HEAVY = (
    "ray",
    "torch",
    "sentence_transformers",
    "transformers",
    "langchain_text_splitters",
    "langchain_core",
    "qdrant_client",
    "bm25s",
    "numpy",
    "openai",
    "httpx",
    "psycopg",
    "llama_cpp",
    "fastapi",
)

PROBE = """
import json, sys
from actors.cli.main import _parser
_parser().format_help()
print(json.dumps(sorted(sys.modules)))
"""


def test_the_cli_and_its_parser_import_no_heavy_library() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120,
        cwd=Path(__file__).parents[2],
    )  # fmt: skip
    loaded = {name.split(".")[0] for name in json.loads(out.stdout.splitlines()[-1])}
    assert not loaded & set(HEAVY), f"`chorus --help` imports {sorted(loaded & set(HEAVY))}"
