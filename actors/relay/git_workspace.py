"""The relay's workspace on disk, as a git repository: the one impure piece here.

A live run mirrors each recorded `WorkspaceChanged` into the directory the person gave
(`--workspace DIR`) and commits at every checkpoint, so they can read, run and `git log`
the code. The log stays the source of truth (`actors.relay.workspace`); `tree_files`
reads the committed tree back so a test can hold the two equal.

Only files the log wrote or deleted are committed: what the verifier leaves behind
(`__pycache__`, `.pytest_cache`, coverage files) stays untracked, and a builder's
`.gitignore` cannot hide a file the log holds. Git runs with the repository's own
identity, no system or global config and literal pathspecs, so a person's hooks,
signing or autocrlf never change what is committed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from actors.relay.workspace import Change

_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL")


class GitWorkspace:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._touched: set[str] = set()  # paths written or deleted since the last commit

    def init(self) -> GitWorkspace:
        """Make `root` a git repository of its own (a no-op if it is one already) with a
        local identity. Never adopts an enclosing repository."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.root / ".git").exists():
            self._git("init", "-q")
        for key, value in (
            ("user.name", "chorus relay"),
            ("user.email", "relay@chorus.invalid"),
            ("commit.gpgsign", "false"),
            ("core.autocrlf", "false"),
            ("core.hooksPath", "/dev/null"),
        ):
            self._git("config", "--local", key, value)
        return self

    def write(self, files: Mapping[str, str]) -> None:
        """Write each file's whole text (creating directories)."""
        self.apply({"path": p, "kind": "write", "content": t} for p, t in files.items())

    def apply(self, changes: Iterable[Change]) -> None:
        """Apply recorded changes (writes and deletes) to the working tree."""
        for change in changes:
            target = self._inside(change["path"])
            self._touched.add(change["path"])
            if change["kind"] == "write":
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(change["content"].encode())
            elif target.exists():
                target.unlink()

    def sync(self, files: Mapping[str, str]) -> None:
        """Make the working tree's files those of a workspace rebuilt from the log (a
        resumed or forked run): write them all, delete tracked files it does not hold."""
        tracked = [p for p in self._git("ls-files", "-z").split("\0") if p]
        self.apply({"path": p, "kind": "delete", "content": None} for p in tracked if p not in files)
        self.write(files)

    def commit(self, message: str) -> str:
        """Stage the paths written or deleted since the last commit and commit them (empty
        commits allowed: every checkpoint gets one); returns the commit's sha."""
        touched = sorted(self._touched)
        present = [p for p in touched if (self.root / p).exists()]
        gone = [p for p in touched if not (self.root / p).exists()]
        if present:
            self._git("add", "-f", "--", *present)
        if gone:
            self._git("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone)
        self._git("commit", "-q", "--allow-empty", "--no-verify", "-m", message)
        self._touched.clear()
        return self._git("rev-parse", "HEAD").strip()

    def tree_files(self, rev: str = "HEAD") -> dict[str, str]:
        """The files of the committed tree at `rev`: path -> text. Empty before the first commit."""
        if subprocess.run(
            ["git", "rev-parse", "--verify", "-q", rev], cwd=self.root, env=self._env(), capture_output=True
        ).returncode:
            return {}
        names = self._git("ls-tree", "-r", "-z", "--name-only", rev).split("\0")
        return {name: self._git("show", f"{rev}:{name}") for name in names if name}

    # -- internals ---------------------------------------------------------------------

    def _inside(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if self.root not in target.parents or ".git" in Path(path).parts:
            raise ValueError(f"a workspace path must stay inside the workspace: {path!r}")
        return target

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
        env.update(
            GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1"
        )
        return env

    def _git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=self._env(), capture_output=True, check=False
        )
        if done.returncode:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"git {args[0]} failed in {self.root}: {message[-1] if message else done.returncode}")
        return done.stdout.decode()
