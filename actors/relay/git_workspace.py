"""The relay's workspace on disk, as a git repository: the one impure piece here.

A live run mirrors each recorded `WorkspaceChanged` into the directory the person gave
(`--workspace DIR`) and commits at every checkpoint, so they can read, run and `git log`
the code. The log stays the source of truth (`actors.relay.workspace`); `tree_files`
reads the committed tree back so a test can hold the two equal.

Only files the log wrote or deleted are committed: what the verifier leaves behind
(`__pycache__`, `.pytest_cache`, coverage files) stays untracked, and a builder's
`.gitignore` cannot hide a file the log holds.

Git here never runs code the workspace holds. The workspace is where model-written code
lives, and its `.git/config` is a file like any other: a hook in `.git/hooks`, a
`core.hooksPath`, an fsmonitor, a clean filter, a pager or an editor named there would run
as the relay, outside any sandbox. So every call passes `-c` overrides that switch each of
these off (`SAFE_CONFIG`, plus an empty command for every filter, diff and merge driver the
repository's config defines, read afresh before each call), runs with a minimal
environment (no API key of the caller's reaches git or anything it could start), no
system or global config, and literal pathspecs.

A repository the person had already is theirs: the relay works on a branch of its own
(`chorus/relay-<run id>`), passes its identity per call (`-c user.name=...`), and writes
nothing into their config. A folder that was not a repository is made one, on that
branch too.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from actors.relay.workspace import Change

IDENTITY = (("user.name", "chorus relay"), ("user.email", "relay@chorus.invalid"))
# What would make git start a program or read a file of the workspace's choosing.
SAFE_CONFIG = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.untrackedCache", "false"),
    ("diff.external", ""),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
# Per driver named in the repository's config: an empty command runs nothing.
DRIVER_KEYS = {"filter": ("clean", "smudge", "process"), "diff": ("textconv", "command"), "merge": ("driver",)}
# The whole environment git gets (PATH is the caller's: git itself must be found).
BASE_ENV = {
    "LANG": "C",
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "HOME": "/nonexistent",
    "XDG_CONFIG_HOME": "/nonexistent",
}


def relay_branch(run_id: str) -> str:
    return f"chorus/relay-{run_id}"


class GitWorkspace:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._touched: set[str] = set()  # paths written or deleted since the last commit

    def init(self, branch: str | None = None) -> GitWorkspace:
        """Make `root` a git repository of its own if it is not one (never adopting an
        enclosing repository), and with `branch` work on that branch: created from the
        current HEAD the first time, switched to after that. Writes no config."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.root / ".git").exists():
            self._git("init", "-q")
        if branch is not None and self.branch() != branch:
            exists = self._ok("rev-parse", "--verify", "-q", f"refs/heads/{branch}")
            self._git("checkout", "-q", *(() if exists else ("-b",)), branch)
        return self

    def drop_stale_lock(self) -> bool:
        """Remove `.git/index.lock` left by a git killed mid-write (the relay's process killed
        during `git add` or `commit`): every later git write would fail on it. Only for a run
        served again after its server died, which is the one writer of this workspace."""
        lock = self.root / ".git" / "index.lock"
        if lock.is_file() and not lock.is_symlink():
            lock.unlink()
            return True
        return False

    def branch(self) -> str | None:
        """The branch HEAD is on (None when detached)."""
        done = self._run("symbolic-ref", "-q", "--short", "HEAD")
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

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
        identity = [arg for key, value in IDENTITY for arg in ("-c", f"{key}={value}")]
        self._git(*identity, "commit", "-q", "--allow-empty", "--no-verify", "--no-gpg-sign", "-m", message)
        self._touched.clear()
        return self._git("rev-parse", "HEAD").strip()

    def tree_files(self, rev: str = "HEAD") -> dict[str, str]:
        """The files of the committed tree at `rev`: path -> text. Empty before the first commit."""
        if not self._ok("rev-parse", "--verify", "-q", rev):
            return {}
        names = self._git("ls-tree", "-r", "-z", "--name-only", rev).split("\0")
        return {name: self._git("show", f"{rev}:{name}") for name in names if name}

    # -- internals ---------------------------------------------------------------------

    def _inside(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if self.root not in target.parents or ".git" in Path(path).parts:
            raise ValueError(f"a workspace path must stay inside the workspace: {path!r}")
        return target

    def _overrides(self) -> list[str]:
        """`-c` pairs for SAFE_CONFIG and every filter/diff/merge driver the repository's
        config (with its includes) defines; reading config runs nothing."""
        pairs = list(SAFE_CONFIG)
        listed = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "config", "--name-only", "--list"],
            cwd=self.root, env=_env(), capture_output=True, check=False,
        )  # fmt: skip
        drivers: set[tuple[str, str]] = set()
        for name in listed.stdout.decode(errors="replace").splitlines():
            section, _, rest = name.partition(".")
            driver = rest.rpartition(".")[0]
            if section.lower() in DRIVER_KEYS and driver:
                drivers.add((section.lower(), driver))
        for section, driver in sorted(drivers):
            pairs += [(f"{section}.{driver}.{key}", "") for key in DRIVER_KEYS[section]]
        return [arg for key, value in pairs for arg in ("-c", f"{key}={value}")]

    def _run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", *self._overrides(), *args], cwd=self.root, env=_env(), capture_output=True, check=False
        )

    def _ok(self, *args: str) -> bool:
        return self._run(*args).returncode == 0

    def _git(self, *args: str) -> str:
        done = self._run(*args)
        if done.returncode:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            what = next((a for a in args if not a.startswith("-") and "=" not in a), args[0])
            raise RuntimeError(f"git {what} failed in {self.root}: {message[-1] if message else done.returncode}")
        return done.stdout.decode()


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath), **BASE_ENV}
