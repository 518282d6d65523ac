"""The wheel as a user gets it (issue 36): built from this tree, checked for the files the code
reads, installed into a fresh virtual environment, and run from there, from a folder outside
the repository: `chorus --version`, `chorus task '(+ 1 2)'` (the task templates), a simulation
pack shipped in the wheel stepped, `chorus serve`'s page, and an agent run against a scripted
OpenAI-compatible endpoint.

Nothing is downloaded: the wheel goes in with `--no-deps`, and the dependencies come from this
virtual environment's site-packages, named in a .pth file of the new one. A .pth file only adds
its folder to sys.path (the .pth files inside that folder are not read), so the editable
install's `__editable__` finder never loads: `actors` is imported from the wheel, which each
test asserts where it matters.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from actors.runtime.llm.types import LlmRequest
from actors.testing.simulation import menu, scripted_mind
from tests.support.sim_endpoint import serving

ROOT = Path(__file__).resolve().parents[2]
MARKER = "ORCHID-42"

pytestmark = pytest.mark.ray


def mind(request: LlmRequest) -> str:
    """Synths pick from their menu; the agent reads NOTES.md, then answers from it."""
    if menu(request):
        return scripted_mind(request)
    system = next((str(m["content"]) for m in request.messages if m.get("role") == "system"), "")
    if "read_file" in system:
        seen = "\n".join(str(m["content"]) for m in request.messages if m.get("role") != "system")
        if MARKER not in seen:
            return json.dumps(
                {
                    "thought": "Read it.",
                    "action": "read_file",
                    "args": {"path": "NOTES.md", "start_line": 1},
                }
            )
        return json.dumps(
            {
                "thought": "Found it.",
                "action": "answer",
                "args": {"answer": f"The marker is {MARKER}."},
            }
        )
    return "ok"


@pytest.fixture(scope="module")
def endpoint():
    with serving(mind) as url:
        yield url


def outside_env() -> dict[str, str]:
    """This environment without what points Python at the repository or this venv: other tests
    put the repository on PYTHONPATH (for Ray's workers), where building the wheel leaves a
    `chorus.egg-info`, and pip then takes chorus as installed and installs nothing."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "RAY_ADDRESS", "PYTHON", "VIRTUAL_ENV"))}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(ROOT)],
        check=True, capture_output=True, timeout=300, env=outside_env(),
    )  # fmt: skip
    (found,) = dist.glob("chorus-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)],
        check=True,
        timeout=120,
        env=outside_env(),
    )
    python = where / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, text=True, timeout=300, env=outside_env(),
    )  # fmt: skip
    assert (where / "bin" / "chorus").exists(), f"pip installed no chorus: {installed.stdout}{installed.stderr}"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=outside_env(),
    ).stdout.strip()  # fmt: skip
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(site) / "_chorus_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    return where


@pytest.fixture(scope="module")
def env(venv, endpoint, tmp_path_factory) -> dict[str, str]:
    data = tmp_path_factory.mktemp("wheel_data")
    return {
        **outside_env(),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "CHORUS_DATA_DIR": str(data / "data"),
        "CHORUS_LLM_BASE_URL": endpoint,
        "CHORUS_LLM_MODEL": "scripted",
        # The wheel's own shared Ray head (its Python is not the repository's venv), on a port
        # of its own, gone soon after the tests.
        "CHORUS_RAY_PORT": "6396",
        "CHORUS_RAY_IDLE_S": "20",
    }


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> Path:
    """The working folder of every command: not the repository, so nothing is imported from it."""
    return tmp_path_factory.mktemp("elsewhere")


def run(venv: Path, env: dict[str, str], cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "chorus"), *args],
        check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_the_wheel_holds_the_data_the_code_reads_and_its_metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = z.read(metadata).decode()
    for needed in (
        "actors/tasks/templates/summarize-file.xml",
        "actors/tasks/examples/director_evaluator.sexp",
        "actors/simulation/packs/lighthouse.yaml",
        "actors/simulation/packs/orchard.yaml",
        "actors/api/static/index.html",
        "actors/api/static/app.js",
        "actors/api/static/style.css",
        "actors/py.typed",
        "events/py.typed",
        "projections/py.typed",
    ):
        assert needed in names, needed
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(n for n in names if "dist-info" in n)
    assert not any(n.startswith(("tests/", "examples/", "docs/", "scripts/")) for n in names)
    assert "License-Expression: MIT" in meta and "Classifier: Typing :: Typed" in meta
    assert "Provides-Extra: local" in meta


WHERE_FROM = """
import json, sys, importlib.metadata as m, actors, events, projections
print(json.dumps({
    "files": [actors.__file__, events.__file__, projections.__file__],
    "version": actors.__version__,
    "dist": str(m.distribution("chorus").locate_file("")),
    "finders": [type(f).__module__ for f in sys.meta_path],
}))
"""


def test_the_installed_package_is_the_one_that_runs(venv, env, elsewhere):
    version = run(venv, env, elsewhere, "--version")
    assert version.returncode == 0, version.stderr
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", WHERE_FROM],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = json.loads(where.stdout)
    for file in [*found["files"], found["dist"]]:
        assert Path(file).resolve().is_relative_to(venv.resolve()), found
    assert not any("__editable__" in f for f in found["finders"]), found
    assert version.stdout.strip() == f"chorus {found['version']}"


def test_a_task_runs_from_the_installed_package(venv, env, elsewhere):
    done = run(venv, env, elsewhere, "task", "(+ 1 2)")
    assert done.returncode == 0, done.stderr
    assert "content: 3" in done.stdout
    assert "4 task templates" in done.stderr  # the templates the wheel carries were found


def test_a_shipped_simulation_pack_steps(venv, env, elsewhere):
    pack = next((venv / "lib").glob("python3*/site-packages/actors/simulation/packs/lighthouse.yaml"))
    new = run(venv, env, elsewhere, "sim", "new", str(pack))
    assert new.returncode == 0, new.stderr
    session = new.stdout.splitlines()[0].split()[1]
    step = run(
        venv,
        env,
        elsewhere,
        "sim",
        "step",
        session,
        "--cycles",
        "1",
        "--in-process",
        "-q",
    )
    assert step.returncode == 0, step.stderr
    assert step.stdout.strip().endswith("1 of 1 cycle(s) committed, now at cycle 1")


def first_answer(proc: subprocess.Popen, url: str, seconds: float = 180) -> httpx.Response:
    """GET `url` once the server answers; the limit is a safety net, not a measurement."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            return httpx.get(url, timeout=10)
        except httpx.TransportError:
            time.sleep(0.3)
    raise AssertionError(
        f"chorus serve never answered (exit {proc.poll()}): {proc.stderr.read() if proc.poll() is not None and proc.stderr else ''}"
    )


def test_serve_gives_the_page(venv, env, elsewhere):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [str(venv / "bin" / "chorus"), "serve", "--port", str(port), "--log-level", "warning"],
        cwd=elsewhere, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        page = first_answer(proc, f"http://127.0.0.1:{port}/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        script = httpx.get(f"http://127.0.0.1:{port}/static/app.js", timeout=10)
        assert script.status_code == 200 and script.text.strip()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_a_scripted_agent_run(venv, env, elsewhere):
    folder = elsewhere / "project"
    folder.mkdir()
    (folder / "NOTES.md").write_text(f"# Notes\n\nThe marker is {MARKER}.\n")
    done = run(
        venv,
        env,
        elsewhere,
        "run",
        "What is the marker in NOTES.md?",
        "--root",
        str(folder),
    )
    assert done.returncode == 0, done.stderr
    assert MARKER in done.stdout
    run_id = done.stdout.splitlines()[0].split()[1]
    replay = run(venv, env, elsewhere, "replay", run_id)
    assert replay.returncode == 0 and "identical" in replay.stdout, replay.stdout + replay.stderr
