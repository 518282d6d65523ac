"""A real multi-node Ray cluster on this machine: a head and worker nodes, each a raylet of
its own with its own resources, started with the `ray start` commands of
deploy/ray-cluster.yaml (never its `ray stop`, which would stop every Ray on the machine).

Every node is a process group of its own (`start_new_session`), so a test can kill one
node for real (its raylet, its workers, its agents: SIGKILL, as a lost machine) and the
finalizer stops exactly what this cluster started, even when the test fails. Ports are
picked free for each node (GCS, node manager, object manager, agents, and a worker port
range of its own), so the cluster does not clash with other Ray instances on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.conftest import in_ci
from tests.support.ray_env import ROOT, worker_path

RAY_UP_YAML = ROOT / "deploy" / "ray-cluster.yaml"
REDIS = ("127.0.0.1", 6379)

# Node loss must be noticed in seconds, not Ray's default half minute.
HEALTH = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


# Below the kernel's ephemeral range (32768-60999), where `bind(0)` picks ports for other
# Ray instances on this machine; Ray's gRPC servers bind with SO_REUSEPORT, so a port
# another instance picked the same way could be shared without an error.
# Single ports from one part, worker port ranges from the other, so they never overlap.
PORTS = (26_000, 32_000)
WORKER_PORTS = (20_000, 26_000)


_ISSUED: set[int] = set()  # ports handed out in this process: a port is free until its node binds it


def free_port() -> int:
    """A free port not handed out before in this process. A node's command line takes
    several at once and binds none until it starts, so a port drawn twice would be
    "free" both times (seen: Ray refusing a head whose two components got one port)."""
    for _ in range(200):
        port = random.randrange(*PORTS)
        if port not in _ISSUED and _is_free(port):
            _ISSUED.add(port)
            return port
    raise RuntimeError("no free port")


def _port_range(size: int = 150) -> tuple[int, int]:
    """A range of worker ports nobody is listening on (checked at a sample of them)."""
    for _ in range(50):
        low = random.randrange(WORKER_PORTS[0], WORKER_PORTS[1] - size)
        if all(_is_free(p) for p in range(low, low + size, 10)):
            return low, low + size - 1
    raise RuntimeError("no free worker port range")


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ray_cli() -> str:
    return shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"


def yaml_start_commands(section: str) -> list[str]:
    """The `ray start` commands of a section of deploy/ray-cluster.yaml (`ray stop` left out)."""
    config = yaml.safe_load(RAY_UP_YAML.read_text())
    return [" ".join(c.split()) for c in config[section] if c.strip() != "ray stop"]


def localize(command: str, *, gcs_port: int, redis: str | None, namespace: str) -> tuple[dict[str, str], list[str]]:
    """A start command of the YAML made runnable here: (environment, argv). The head's
    address and port become ours; Redis becomes this machine's (or is dropped); the
    autoscaling config `ray up` writes is dropped (there is no autoscaler here)."""
    words = shlex.split(command)
    env: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if env.get("RAY_REDIS_ADDRESS"):
        if redis is None:
            env.pop("RAY_REDIS_ADDRESS")
            env.pop("RAY_external_storage_namespace", None)
        else:
            env["RAY_REDIS_ADDRESS"] = redis
            env["RAY_external_storage_namespace"] = namespace
    argv: list[str] = []
    for word in words:
        if word.startswith("--autoscaling-config="):
            continue
        word = word.replace("$RAY_HEAD_IP", "127.0.0.1").replace("HEAD_HOST", "127.0.0.1")
        word = word.replace("--port=6379", f"--port={gcs_port}").replace("127.0.0.1:6379", f"127.0.0.1:{gcs_port}")
        argv.append(word)
    assert argv[:2] == ["ray", "start"], command
    return env, [ray_cli(), *argv[1:]]


@dataclass
class Node:
    name: str
    pgid: int
    node_manager_port: int
    resources: dict[str, float]
    alive: bool = True


@dataclass
class LocalCluster:
    temp_dir: str
    gcs_port: int = field(default_factory=free_port)
    namespace: str = field(default_factory=lambda: f"chorus-test-{uuid.uuid4().hex[:10]}")
    redis: str | None = None
    # Ray's token authentication, on: a head started without it takes one from
    # ~/.ray/auth_token if a local `ray.init()` left one there, and its workers then fail.
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    nodes: dict[str, Node] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    # How fast the GCS declares a silent node dead; a test may slow it (set before start_head).
    health: dict[str, str] = field(default_factory=lambda: dict(HEALTH))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        worker_path()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "CHORUS_"))}
        env.update(self.health)
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env["RAY_AUTH_MODE"], env["RAY_AUTH_TOKEN"] = "token", self.token
        env.update(extra or {})
        return env

    def start_head(self, resources: dict[str, float] | None = None, num_cpus: int = 1) -> Node:
        (command,) = yaml_start_commands("head_start_ray_commands")
        return self._start("head", command, resources or {}, num_cpus, head=True)

    def add_worker(
        self, name: str, resources: dict[str, float] | None = None, num_cpus: int = 2, ip: str | None = None
    ) -> Node:
        """A worker node; with `ip` (another loopback address, 127.0.0.N) it is a machine of
        its own that a driver can join through (`ray.init(_node_ip_address=ip)`), not the head."""
        (command,) = yaml_start_commands("worker_start_ray_commands")
        return self._start(name, command, resources or {}, num_cpus, head=False, extra=[f"--node-ip-address={ip}"] if ip else [])

    def restart_head(self) -> Node:
        """Kill the head (GCS, its raylet, everything on it) as a lost machine, and start it
        again at the same address, as a supervisor (or KubeRay) would."""
        self.kill_node("head")
        old = self.nodes.pop("head")
        self.nodes["head (lost)"] = old
        # A new machine would not have the old one's note of "the cluster running here"
        # (the worker raylets still name this address, so `ray start` takes it for running).
        Path(self.temp_dir, "ray_current_cluster").unlink(missing_ok=True)
        try:
            return self.start_head()
        except AssertionError as e:
            # `ray start` gives the new raylet a fixed 30 s to register with the restored
            # GCS; on a loaded machine that can pass. Stop that attempt and start once more.
            if "timed out during startup" not in str(e):
                raise
            failed = self.nodes.pop("head")
            self.nodes["head (failed start)"] = failed
            self.kill_node("head (failed start)")
            Path(self.temp_dir, "ray_current_cluster").unlink(missing_ok=True)
            return self.start_head()

    def _start(
        self, name: str, command: str, resources: dict[str, float], num_cpus: int, *, head: bool, extra: list[str] = ()
    ) -> Node:
        env, argv = localize(command, gcs_port=self.gcs_port, redis=self.redis, namespace=self.namespace)
        given = next((a for a in argv if a.startswith("--resources=")), None)
        merged = {**(json.loads(given.split("=", 1)[1]) if given else {}), **resources}
        argv = [a for a in argv if not a.startswith("--resources=")]
        nm_port = free_port()
        low, high = _port_range()
        argv += [
            f"--resources={json.dumps(merged)}", f"--num-cpus={num_cpus}", "--disable-usage-stats",
            f"--node-name={name}",
            "--object-store-memory=200000000",
            f"--node-manager-port={nm_port}", f"--object-manager-port={free_port()}",
            f"--min-worker-port={low}", f"--max-worker-port={high}",
            f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
            f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
        ]  # fmt: skip
        argv += list(extra)
        if head:
            argv += [f"--temp-dir={self.temp_dir}", "--include-dashboard=false", f"--ray-client-server-port={free_port()}"]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env(env), start_new_session=True
        )
        node = Node(name, proc.pid, nm_port, merged)
        self.nodes[name] = node  # before waiting: a start that fails half-way is still cleaned up
        output, _ = proc.communicate(timeout=180)
        text = output.decode(errors="replace")
        self.logs.append(f"--- {name}: {shlex.join(argv)}\n{text[-3000:]}")
        assert proc.returncode == 0, text[-3000:]
        return node

    def kill_node(self, name: str) -> int:
        """Kill a node as a lost machine: SIGKILL to its raylet, its workers and daemons."""
        node = self.nodes[name]
        procs = _processes_of(node.pgid)
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.kill()
        _wait(procs, 20)
        node.alive = False
        return len(procs)

    def stop(self) -> None:
        """Stop everything this cluster started, nodes and their workers; nothing else."""
        procs: dict[int, object] = {}
        for node in self.nodes.values():
            procs.update((p.pid, p) for p in _processes_of(node.pgid))
        procs.update((p.pid, p) for p in _processes_naming(self.temp_dir))
        procs.pop(os.getpid(), None)
        for proc in procs.values():
            with contextlib.suppress(Exception):
                proc.terminate()  # type: ignore[attr-defined]
        alive = _wait(list(procs.values()), 15)
        for proc in alive:
            with contextlib.suppress(Exception):
                proc.kill()
        _wait(alive, 10)
        if self.redis:
            clean_redis(self.namespace)


def _psutil():
    import ray  # noqa: F401, I001 - first: it puts its vendored psutil (ray/thirdparty_files) on the path
    import psutil

    return psutil


def _processes_of(pgid: int) -> list:
    """The processes of one node: its process group, and every descendant of them (Ray's
    workers start sessions of their own)."""
    psutil = _psutil()
    found: dict[int, object] = {}
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(proc.pid) == pgid:
                found[proc.pid] = proc
                found.update((c.pid, c) for c in proc.children(recursive=True))
    found.pop(os.getpid(), None)
    return list(found.values())


def _processes_naming(text: str) -> list:
    psutil = _psutil()
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error, OSError):
            if any(text in part for part in proc.info["cmdline"] or ()):
                found.append(proc)
                found.extend(proc.children(recursive=True))
    return found


def _wait(procs: list, timeout: float) -> list:
    psutil = _psutil()
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return alive


# -- Redis (GCS fault tolerance) ------------------------------------------------------------


def _redis(*command: str) -> object:
    """One command to the local Redis over its wire protocol (no client library needed)."""
    payload = f"*{len(command)}\r\n" + "".join(f"${len(c.encode())}\r\n{c}\r\n" for c in command)
    with socket.create_connection(REDIS, timeout=3) as s:
        s.sendall(payload.encode())
        reader = s.makefile("rb")
        return _read_reply(reader)


def _read_reply(reader) -> object:
    line = reader.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = reader.read(n + 2)[:-2]
        return data.decode(errors="replace")
    if kind == b"*":
        return [_read_reply(reader) for _ in range(int(rest))]
    raise RuntimeError(f"unexpected Redis reply {line!r}")


def redis_available() -> bool:
    try:
        return _redis("PING") == "PONG"
    except OSError:
        return False


def redis_keys(namespace: str) -> list[str]:
    keys: list[str] = []
    cursor = "0"
    while True:
        cursor, batch = _redis("SCAN", cursor, "MATCH", f"*{namespace}*", "COUNT", "1000")  # type: ignore[misc]
        keys.extend(batch)
        if cursor == "0":
            return keys


def clean_redis(namespace: str) -> None:
    with contextlib.suppress(OSError):
        for key in redis_keys(namespace):
            _redis("DEL", key)


def require_redis() -> str:
    if redis_available():
        return f"{REDIS[0]}:{REDIS[1]}"
    reason = f"Redis at {REDIS[0]}:{REDIS[1]} unreachable (GCS fault tolerance needs it)"
    if in_ci():
        pytest.fail(f"{reason} (CI is set: cluster tests must run, not skip)")
    pytest.skip(reason)


# -- fixtures -------------------------------------------------------------------------------


@contextlib.contextmanager
def running_cluster() -> Iterator[LocalCluster]:
    """A cluster of our own, stopped on the way out whatever happened inside. Add nodes
    with `start_head` and `add_worker`."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    temp_dir = tempfile.mkdtemp(prefix="chorus-c-", dir="/tmp")  # short: Ray's socket paths
    cluster = LocalCluster(temp_dir)
    try:
        yield cluster
    finally:
        try:
            if ray.is_initialized():
                ray.shutdown()
            cluster.stop()
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def local_cluster() -> Iterator[LocalCluster]:
    with running_cluster() as cluster:
        yield cluster


def read_message(proc: subprocess.Popen, timeout: float) -> dict | None:
    """The next message (`@@chorus {json}` line) on a child's stdout; None if none comes in
    time or the child exits. Other lines (Ray's warnings) are passed over."""
    import select

    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            return None
        line = proc.stdout.readline()
        if not line:
            return None
        if line.startswith("@@chorus "):
            return json.loads(line.removeprefix("@@chorus "))
    return None


def last_message(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith("@@chorus ")]
    assert lines, stdout[-2000:]
    return json.loads(lines[-1].removeprefix("@@chorus "))


# -- the runs client and its log -----------------------------------------------------------


def start_runs_client(cluster: LocalCluster, env: dict[str, str], root: Path, runs: int, midrun: int, late: int = 0):
    """`python -m tests.cluster.client_runs` in a process of its own, as a user's client."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.cluster.client_runs", cluster.address, str(runs), str(root), str(midrun), str(late)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def first_message(client: subprocess.Popen) -> dict:
    """The client's report that its runs are under way (or why it has none)."""
    first = read_message(client, timeout=300)
    assert first is not None, client.stderr.read()[-3000:] if client.poll() is not None else "no reply"
    return first


def go_ahead(client: subprocess.Popen, timeout: float = 600) -> tuple[str, str]:
    """Tell the client the damage is done; its remaining output (it may have died of it)."""
    with contextlib.suppress(BrokenPipeError):
        client.stdin.write("go\n")
        client.stdin.flush()
    return client.communicate(timeout=timeout)


def check_the_log(store_url: str, actors: dict[str, dict], *, steps: tuple[int, int] | None = (9, 8)) -> None:
    """From the log: no event twice, versions contiguous, each agent's state (as its actor
    reported it) equal to the fold of its stream, each run completed; with `steps`, each
    agent made exactly that many (LLM, tool) calls, none repeated."""
    from actors.agent.actor import agent_stream
    from actors.agent.react import ReactAgent
    from actors.runtime.shell import rebuild
    from events.store import EventStore

    store = EventStore(store_url)
    try:
        records = list(store.read_all())
        assert len({r.event.event_id for r in records}) == len(records)
        positions = [r.position for r in records]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        for run_id, actor in actors.items():
            events = store.read_stream(agent_stream(run_id))
            assert [e.version for e in events] == list(range(1, len(events) + 1))
            if steps:
                llm_calls = [e.call_index for e in events if e.type_name == "LlmRequested"]
                tool_calls = [e.call_index for e in events if e.type_name == "ToolCalled"]
                assert llm_calls == list(range(1, steps[0] + 1)) and tool_calls == list(range(1, steps[1] + 1)), run_id
            assert actor["version"] == len(events)
            assert actor["state"] == rebuild(ReactAgent(), events).model_dump(mode="json")
            run_types = [e.type_name for e in store.read_stream(f"run:{run_id}")]
            assert run_types == ["RunSubmitted", "RunStarted", "RunCompleted"]
    finally:
        store.close()


def explain_runs(store_url: str, report: dict, run_ids, logs_dir: str | None = None, last: int = 15) -> str:
    """Why runs did not complete, for a failing test's message: the client's errors, each
    run's agent as Ray last saw it (node, restarts, death cause), its run stream in full and
    the last `last` events of its agent stream (every field), and the Ray log lines (under
    `logs_dir`) that name the run or its agent's actor id."""
    from actors.agent.actor import agent_stream
    from events.store import EventStore

    lines = [f"errors: {json.dumps(report.get('errors', {}), indent=1)}"]
    store = EventStore(store_url)
    try:
        for run_id in sorted(run_ids):
            status = report.get("results", {}).get(run_id, "no result")
            actor = {k: v for k, v in report.get("actors", {}).get(run_id, {}).items() if k != "state"}
            lines.append(f"\n=== run {run_id}: {status}; agent {json.dumps(actor)}")
            for stream, tail in ((f"run:{run_id}", None), (agent_stream(run_id), last)):
                events = store.read_stream(stream)
                shown = events if tail is None else events[-tail:]
                lines.append(f"--- {stream}: {len(events)} events, the last {len(shown)}:")
                lines += [f"  {e.version} {e.type_name} {e.timestamp.isoformat()} "
                          f"{json.dumps(e.payload(), default=str)[:1500]}" for e in shown]  # fmt: skip
    finally:
        store.close()
    if logs_dir:
        ids = [report.get("actors", {}).get(r, {}).get("actor_id") for r in run_ids]
        lines.append("\n" + ray_log_lines(logs_dir, [*run_ids, *filter(None, ids)]))
    return "\n".join(lines)


def ray_log_lines(logs_dir: str, words, around: int = 30, limit: int = 600) -> str:
    """The lines of Ray's logs (every node's, under a cluster's temp dir) that name one of
    `words`, with the `around` lines after each in a worker's stderr (a traceback), at most
    `limit` lines."""
    out: list[str] = []
    for path in sorted(Path(logs_dir).glob("session_2*/logs/*")):  # not session_latest again
        if not path.is_file() or path.suffix not in (".out", ".err", ".log"):
            continue
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        hits = [i for i, line in enumerate(text) if any(w in line for w in words)]
        if not hits:
            continue
        out.append(f"--- {path.relative_to(logs_dir)}")
        shown, after = -1, around if path.suffix == ".err" else 1
        for i in hits:
            for j in range(max(i, shown + 1), min(len(text), i + after)):
                out.append(f"  {text[j][:400]}")
                shown = j
        if len(out) > limit:
            break
    return "ray logs naming the runs:\n" + ("\n".join(out[:limit]) if out else "  (none)")


def wait_for(predicate, timeout: float, what: str, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)
