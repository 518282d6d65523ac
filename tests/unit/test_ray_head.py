"""The shared Ray head's pure parts: what a job's workers are given, who counts as a user, and
when a note stands for a head that runs (actors.runtime.ray_head)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from actors.runtime import ray_head


def test_workers_get_the_submitting_processs_chorus_variables_pythonpath_and_folder():
    env = {"CHORUS_STORE_URL": "sqlite:///x.db", "OPENAI_API_KEY": "k", "PYTHONPATH": "/p", "HOME": "/h",
           "AWS_SECRET": "no", "HF_HOME": "/hf"}
    got = ray_head.driver_runtime_env(env, cwd="/work/here")
    assert got["env_vars"] == {"CHORUS_STORE_URL": "sqlite:///x.db", "OPENAI_API_KEY": "k", "PYTHONPATH": "/p",
                               "HF_HOME": "/hf", ray_head.CWD_VAR: "/work/here"}
    module, _, name = got["worker_process_setup_hook"].rpartition(".")
    assert getattr(__import__(module, fromlist=[name]), name) is ray_head.enter_driver_cwd


def test_the_setup_hook_enters_the_folder_and_puts_it_on_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv(ray_head.CWD_VAR, str(tmp_path))
    monkeypatch.chdir("/")
    monkeypatch.setattr(sys, "path", list(sys.path))
    ray_head.enter_driver_cwd()
    assert os.getcwd() == str(tmp_path) and sys.path[0] == str(tmp_path)
    monkeypatch.setenv(ray_head.CWD_VAR, str(tmp_path / "gone"))
    ray_head.enter_driver_cwd()  # a folder that is gone: stays where it is
    assert os.getcwd() == str(tmp_path)


def test_users_are_the_live_processes_and_dead_ones_are_forgotten(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_head, "state_folder", lambda: tmp_path)
    folder = ray_head.users_dir(7001)
    folder.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for name in (str(os.getpid()), str(dead.pid), "not-a-pid"):
        (folder / name).touch()
    assert ray_head.live_users(7001) == [os.getpid()]
    assert sorted(p.name for p in folder.iterdir()) == [str(os.getpid())]


def test_a_note_is_a_running_head_only_when_ready_its_watch_alive_and_its_port_open(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_head, "state_folder", lambda: tmp_path)
    assert ray_head.running(7002) is None  # no note
    note = {"pid": os.getpid(), "port": 7002, "python": sys.executable, "ready": False}
    ray_head.note_path(7002).write_text(json.dumps(note))
    assert ray_head.running(7002) is None  # not ready
    ray_head.note_path(7002).write_text(json.dumps({**note, "ready": True}))
    assert ray_head.running(7002) is None  # nothing listens on the port
    monkeypatch.setattr(ray_head, "_listening", lambda port, timeout=1.0: True)
    assert ray_head.running(7002)["pid"] == os.getpid()
    ray_head.note_path(7002).write_text("{not json")
    assert ray_head.running(7002) is None


def test_a_head_of_another_python_is_not_joined(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_head, "state_folder", lambda: tmp_path)
    monkeypatch.setattr(ray_head, "_listening", lambda port, timeout=1.0: True)
    note = {"pid": os.getpid(), "port": 7003, "python": "/other/venv/bin/python", "ready": True}
    ray_head.note_path(7003).write_text(json.dumps(note))
    try:
        ray_head.shared_head(7003, 60, tmp_path / "log")
    except ray_head.SharedRayError as e:
        assert "/other/venv/bin/python" in str(e)
    else:
        raise AssertionError("joined another Python's head")


def test_the_token_is_the_users_alone_and_a_joining_process_gets_its_path_not_the_secret(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_head, "state_folder", lambda: tmp_path)
    path = ray_head.token_path()
    assert oct(path.stat().st_mode & 0o777) == "0o600" and len(path.read_text()) == 64
    assert ray_head.token_path().read_text() == path.read_text()  # made once
    monkeypatch.setenv("RAY_AUTH_TOKEN", "left-by-another-instance")
    env = ray_head.auth_env()
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}
    assert path.read_text() not in json.dumps(env)
