"""`Client(address=...)` joins an existing Ray cluster (a head started here with `ray start`),
with the PostgreSQL store every node shares."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from actors import Client
from actors.runtime.settings import ConfigError, Settings
from tests.support import fake_llm
from tests.support.ray_env import worker_path

pytestmark = pytest.mark.ray


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> str:
    return shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"


@pytest.fixture
def ray_head():
    """A head node of our own: its own temp dir and process group, so teardown stops exactly
    what it started (never `ray stop`, which kills every Ray instance on the machine)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    worker_path()
    # Ray's token authentication, as a deployment would run it: the head and the client
    # (a process of its own) share one secret.
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="chorus-ray-", dir="/tmp")  # short: Ray's socket paths
    head = subprocess.Popen(
        [_ray_cli(), "start", "--head", f"--port={port}", "--num-cpus=2", f"--temp-dir={temp_dir}",
         "--include-dashboard=false", "--disable-usage-stats"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = head.communicate(timeout=180)
        assert head.returncode == 0, output.decode(errors="replace")[-2000:]
        yield f"127.0.0.1:{port}", env
    finally:
        ray.shutdown()
        _stop_our_ray(head.pid, temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _stop_our_ray(pgid: int, temp_dir: str) -> None:
    """Stop the processes this test's `ray start` launched: its process group (the daemons
    inherit it), their descendants (Ray workers start sessions of their own) and anything
    whose command line names our temp dir. Nothing else is touched."""
    import ray  # noqa: F401, I001 - first: it puts its vendored psutil (ray/thirdparty_files) on the path
    import psutil

    def group(proc: psutil.Process) -> int | None:
        try:
            return os.getpgid(proc.pid)
        except OSError:
            return None

    ours: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if group(proc) == pgid or any(temp_dir in part for part in proc.info["cmdline"] or ()):
                ours[proc.pid] = proc
                ours.update((child.pid, child) for child in proc.children(recursive=True))
    ours.pop(os.getpid(), None)
    for proc in ours.values():
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(list(ours.values()), timeout=20)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=10)


CLIENT = """
import json, sys
from pathlib import Path
import ray
from actors import Client
from actors.testing.model import ScriptedProvider
from actors.runtime.settings import Settings
from tests.support import fake_llm

address, store_url, root = sys.argv[1:4]
settings = Settings.from_env(data_dir=Path(root) / "data", store_url=store_url)
with Client(address=address, settings=settings, llm=ScriptedProvider(fake_llm.search_read_answer)) as c:
    run = c.submit("What is the marker?", root=root)
    result = run.wait(timeout=120)
    types = [r.event.type_name for r in c.events(run.run_id)]
    gcs = ray.get_runtime_context().gcs_address
print(json.dumps({"ok": result.ok, "answer": result.answer, "error": str(result.error), "types": types, "gcs": gcs}))
"""


def test_client_joins_a_cluster_with_the_postgres_store(ray_head, postgres_url, tmp_path):
    address, env = ray_head
    # The client runs in a process of its own, as a user's would (Ray reads its auth mode
    # once per process, and this one may have run a local instance already).
    fake_llm.make_repo(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, address, postgres_url, str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    body = json.loads(out.stdout.strip().splitlines()[-1])
    assert body["gcs"].endswith(address.split(":")[1])  # it joined the cluster, not a new one
    assert body["ok"] and "ALPHA-7" in body["answer"], body["error"]
    assert body["types"][0] == "RunSubmitted" and body["types"][-1] == "RunCompleted"


def test_a_cluster_refuses_a_sqlite_store(tmp_path):
    settings = Settings.from_env(data_dir=tmp_path, store_url=f"sqlite:///{tmp_path / 'x.db'}")
    with pytest.raises(ConfigError, match="postgresql"):
        Client(address="127.0.0.1:6379", settings=settings)
