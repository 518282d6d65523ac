"""Ray workers import test helpers (tests.support) by name: put the repo on their path. And
the environment the test Ray instance's workers start with (`worker_env`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def worker_path() -> None:
    parts = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


# The scripted code-question model (tests.support.codeqa_llm) plays seed 003's HyDE answer and
# keywords inside semantic_file_search, and the Ray tests count those tool calls (budgets, kill
# recovery, the tool's stream), so the tool actors of the test Ray instance search with HyDE.
# The default ranking (hybrid: no model call) is tested in-process (test_codeqa_hybrid_default).
WORKER_ENV = {"CHORUS_CODEQA_CONFIG": '{"semantic_search": {"ranking": "hyde"}}'}


@contextmanager
def worker_env() -> Iterator[None]:
    """Around `ray.init`: the local instance's workers inherit `WORKER_ENV`; this process's
    own environment is restored afterwards."""
    before = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
