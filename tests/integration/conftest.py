"""A real local Ray instance for the integration tests, shared by the session."""

from __future__ import annotations

import logging

import pytest

from tests.support.ray_env import worker_path


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
