"""A real local Ray instance for the integration tests, shared by the session."""

from __future__ import annotations

import logging

import pytest

from actors import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from tests.support.ray_env import worker_env, worker_path


@pytest.fixture
def ray_local():
    """A local Ray instance, started once and reused (a cluster test may have stopped it)."""
    import ray

    worker_path()
    if not ray.is_initialized():
        with worker_env():  # the workers' semantic_file_search plays HyDE with the scripted model
            ray.init(
                address="local",  # never join a `ray start` cluster that runs on this machine
                num_cpus=2,
                include_dashboard=False,
                logging_level=logging.WARNING,
                namespace="chorus-tests",
            )
    return ray


@pytest.fixture
def client(ray_local, tmp_path):
    """`client(script)`: a Client on local Ray and a SQLite file of this test, with a scripted model."""
    def make(script):
        settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
        return Client(settings=settings, llm=ScriptedProvider(script))

    return make
