"""Git that never runs workspace code (issue 34): what the workspace's `.git` names (hooks,
`core.hooksPath`, a clean filter, an fsmonitor) runs nothing when the relay commits, git gets
none of the caller's environment, and a person's repository keeps its config, identity and
branch: the relay works on a branch of its own."""

from __future__ import annotations

import os
import stat
import subprocess

from actors.relay.git_workspace import GitWorkspace, relay_branch


def git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def hostile_hook(path, marker):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nenv > {marker}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_hooks_and_config_planted_in_the_workspace_run_nothing_on_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("CANARY_API_KEY", "sk-canary")
    ws = GitWorkspace(tmp_path / "ws").init(relay_branch("r1"))
    ws.write({"a.py": "1\n"})
    ws.commit("one")
    marker = tmp_path / "PWNED"
    # what code in a sandbox that found the real workspace did: a post-commit hook, hooksPath
    # pointing at a folder of its own, a clean filter and an fsmonitor in .git/config
    hostile_hook(ws.root / ".git" / "hooks" / "post-commit", marker)
    hostile_hook(ws.root / ".git" / "hooks" / "pre-commit", marker)
    hostile_hook(tmp_path / "evil-hooks" / "post-commit", marker)
    hostile_hook(tmp_path / "evil-hooks" / "reference-transaction", marker)
    hostile_hook(tmp_path / "fsmonitor", marker)
    for key, value in (
        ("core.hooksPath", str(tmp_path / "evil-hooks")),
        ("core.fsmonitor", str(tmp_path / "fsmonitor")),
        ("filter.evil.clean", f"sh -c 'env > {marker}; cat'"),
        ("filter.evil.process", str(tmp_path / "fsmonitor")),
        ("core.pager", f"sh -c 'env > {marker}'"),
    ):
        git(ws.root, "config", key, value)
    ws.write({".gitattributes": "* filter=evil\n", "b.py": "2\n"})
    ws.commit("two")  # every checkpoint commits: the attack ran here
    assert ws.tree_files()["b.py"] == "2\n"
    ws.sync({"c.py": "3\n"})
    ws.commit("three")
    ws.tree_files()
    assert not marker.exists(), marker.read_text()


def test_git_gets_a_minimal_environment(tmp_path, monkeypatch):
    from actors.relay import git_workspace

    monkeypatch.setenv("CANARY_API_KEY", "sk-canary")
    env = git_workspace._env()
    assert "CANARY_API_KEY" not in env and set(env) <= {"PATH", *git_workspace.BASE_ENV}


def test_a_persons_repository_keeps_its_config_identity_and_branch(tmp_path):
    root = tmp_path / "theirs"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    git(root, "config", "user.name", "Ada")
    git(root, "config", "user.email", "ada@example.org")
    (root / "main.py").write_text("print('mine')\n")
    git(root, "add", "main.py")
    git(root, "commit", "-q", "-m", "theirs")
    config_before = (root / ".git" / "config").read_text()
    head_before = git(root, "rev-parse", "trunk")

    ws = GitWorkspace(root).init(relay_branch("r2"))
    ws.write({"main.py": "print('relay')\n"})
    ws.commit("checkpoint")
    assert ws.branch() == "chorus/relay-r2"
    again = GitWorkspace(root).init(relay_branch("r2"))  # a resumed relay: same branch
    assert again.branch() == "chorus/relay-r2"

    assert (root / ".git" / "config").read_text() == config_before  # no identity, no hooksPath
    assert git(root, "rev-parse", "trunk") == head_before  # their branch did not move
    author = git(root, "log", "-1", "--format=%an <%ae>", "chorus/relay-r2").strip()
    assert author == "chorus relay <relay@chorus.invalid>"
    assert git(root, "show", "trunk:main.py") == "print('mine')\n"


def test_a_new_folder_is_made_a_repository_on_the_relays_branch(tmp_path):
    ws = GitWorkspace(tmp_path / "fresh").init(relay_branch("r3"))
    ws.write({"a.py": "x = 1\n"})
    ws.commit("one")
    assert ws.branch() == "chorus/relay-r3"
    config = (ws.root / ".git" / "config").read_text()
    assert "hooksPath" not in config and "user." not in config
    assert os.path.isdir(ws.root / ".git")


def test_a_lock_left_by_a_killed_git_fails_every_write_until_a_resumed_run_drops_it(tmp_path):
    ws = GitWorkspace(tmp_path / "ws").init(relay_branch("r1"))
    ws.write({"a.py": "x = 1\n"})
    ws.commit("one")
    (tmp_path / "ws" / ".git" / "index.lock").write_text("")  # git killed mid `git add`
    ws.write({"a.py": "x = 2\n"})
    try:
        ws.commit("two")
        raise AssertionError("a commit went through a held index.lock")
    except RuntimeError as e:
        assert "index.lock" in str(e) or "manually" in str(e)
    assert ws.drop_stale_lock() and not ws.drop_stale_lock()
    ws.commit("two")
    assert ws.tree_files() == {"a.py": "x = 2\n"}
