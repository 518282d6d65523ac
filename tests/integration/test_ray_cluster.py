"""`Client(address=...)` joins an existing Ray cluster (a head started here with `ray start`),
with the PostgreSQL store every node shares."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from actors import Client
from actors.runtime.llm.providers import ScriptedProvider
from actors.runtime.settings import ConfigError, Settings
from tests.support.ray_env import worker_path
from tests.support import fake_llm

pytestmark = pytest.mark.ray


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> str:
    return shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"


@pytest.fixture
def ray_head():
    import ray

    if ray.is_initialized():
        ray.shutdown()
    worker_path()
    # Ray reads RAY_AUTH_MODE once per process, so this test process (already a Ray user)
    # cannot switch to token auth; the head is started without it. A deployment sets
    # RAY_AUTH_MODE=token and RAY_AUTH_TOKEN on every node and client (see README).
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    port = _free_port()
    subprocess.run(
        [_ray_cli(), "start", "--head", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats"],
        check=True, capture_output=True, env=env, timeout=180,
    )  # fmt: skip
    try:
        yield f"127.0.0.1:{port}"
    finally:
        ray.shutdown()
        subprocess.run([_ray_cli(), "stop", "--force"], capture_output=True, timeout=120)


def test_client_joins_a_cluster_with_the_postgres_store(ray_head, postgres_url, tmp_path):
    import ray

    fake_llm.make_repo(tmp_path)
    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=postgres_url)
    with Client(address=ray_head, settings=settings, llm=ScriptedProvider(fake_llm.search_read_answer)) as c:
        run = c.submit("What is the marker?", root=tmp_path)
        result = run.wait(timeout=120)
        types = [r.event.type_name for r in c.events(run.run_id)]
        assert ray.get_runtime_context().gcs_address.endswith(ray_head.split(":")[1])
    assert result.ok and "ALPHA-7" in result.answer
    assert types[0] == "RunSubmitted" and types[-1] == "RunCompleted"


def test_a_cluster_refuses_a_sqlite_store(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path, store_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(ConfigError, match="postgresql"):
        Client(address="127.0.0.1:6379", settings=settings)
