"""A real local Ray instance for the integration tests, shared by the session."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _worker_path() -> None:
    # Ray workers import test helpers (tests.support) by name: put the repo on their path.
    parts = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(scope="session")
def ray_local():
    import ray

    _worker_path()
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.WARNING,
        namespace="chorus-tests",
    )
    yield ray
    ray.shutdown()
