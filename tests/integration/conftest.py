"""A real local Ray instance for the integration tests, shared by the session."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def worker_path() -> None:
    # Ray workers import test helpers (tests.support) by name: put the repo on their path.
    parts = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture
def ray_local():
    """A local Ray instance, started once and reused (a cluster test may have stopped it)."""
    import ray

    worker_path()
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            logging_level=logging.WARNING,
            namespace="chorus-tests",
        )
    return ray
