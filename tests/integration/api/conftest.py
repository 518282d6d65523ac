"""One real local Ray, one SQLite store, one app and one uvicorn server per test module.

The app's client serves runs with a scripted model (tests/support/fake_llm.py), so a run
is real (Ray actors, the event log, the views) but fast and needs no LLM server.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from actors.api.places import ApiConfig
from actors.runtime.client import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from tests.support import fake_llm
from tests.support.ray_env import worker_env, worker_path

TOKENS = {"r-token": "read", "o-token": "operate", "a-token": "admin"}
BEARER = {scope: {"Authorization": f"Bearer {tok}"} for tok, scope in TOKENS.items()}


@pytest.fixture(scope="module")
def ray_module():
    import ray

    worker_path()
    if not ray.is_initialized():
        with worker_env():  # the same workers as tests/integration/conftest.py's
            ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, namespace="chorus-tests")
    return ray


@dataclass
class Env:
    root: Path  # the folder the scripted agents read
    settings: Settings
    client: Client

    @property
    def config(self) -> ApiConfig:
        """The API's configuration: the folder holding `root` is one runs may name."""
        return ApiConfig.from_env(self.settings, env={}, workspace_dirs=[self.root.parent])


def make_env(tmp: Path, responder: Any = fake_llm.search_read_answer) -> Env:
    root = tmp / "repo"
    root.mkdir()
    fake_llm.make_repo(root)
    settings = Settings.from_env(
        data_dir=tmp / "data", store_url=f"sqlite:///{tmp / 'chorus.db'}", llm_base_url="http://127.0.0.1:9/v1"
    )
    return Env(root, settings, Client(settings=settings, llm=ScriptedProvider(responder)))


class Server:
    """uvicorn on a free port, in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 60  # a safety net, not a measurement
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn did not start"
            assert time.monotonic() < deadline, "uvicorn did not start in 60 s"
            time.sleep(0.02)
        sock = self.server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_end(http: httpx.Client, run_id: str, limit: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + limit  # a safety net for a hung run, not a measurement
    while True:
        body = http.get(f"/v1/runs/{run_id}", headers=BEARER["read"]).json()
        if body["status"] in ("completed", "failed"):
            return body
        assert time.monotonic() < deadline, f"run {run_id} never ended: {body}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def env(tmp_path_factory, ray_module) -> Iterator[Env]:
    e = make_env(tmp_path_factory.mktemp("api"))
    yield e
    e.client.close()
