"""The sandbox's command line, built without running anything: what is shown, what is
writable, who the command runs as, its limits and its environment, as root and not."""

from __future__ import annotations

import pytest

from actors.tools.sandbox import (
    HOME,
    PRLIMIT,
    SETPRIV,
    Host,
    Launch,
    SandboxPolicy,
    SandboxResult,
    _why_stopped,
    describe_stop,
    etc_files,
    sandbox_argv,
    sandbox_env,
)

VENV = "/work/chorus/.venv"
PREFIX = "/root/.pyenv/versions/3.11.7"
WS = "/tmp/chorus-verify-abc"
REPORTS = "/tmp/chorus-pytest-def"
POLICY = SandboxPolicy(timeout_s=5, cpu_s=7, memory_mb=512, max_processes=32, max_file_mb=8, tmp_mb=64)


def machine(privileged: bool, data_dir: str = "/root/.chorus") -> Host:
    return Host(
        bwrap="/usr/bin/bwrap",
        privileged=privileged,
        python=(PREFIX, VENV),
        venv_bin=f"{VENV}/bin",
        links=(("/bin", "usr/bin"), ("/lib", "usr/lib")),
        system_dirs=(),
        data_dir=data_dir,
    )


def launch(*writable: str, uid: int = 1_900_000_000) -> Launch:
    return Launch(uid, uid, writable[0], writable, (("PATH", "/usr/bin"), ("HOME", HOME)), (("/etc/passwd", 7),))


def pairs(argv: list[str], flag: str) -> list[str]:
    """The destinations of every `flag SRC DEST` (or `flag DEST`) in the argv."""
    width = {"--bind": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--ro-bind-data": 2, "--symlink": 2}.get(flag, 1)
    return [argv[i + width] for i, a in enumerate(argv) if a == flag]


def head(argv: list[str]) -> list[str]:
    return argv[: argv.index("--")]


def test_as_root_the_command_runs_as_the_runs_own_uid_without_capabilities():
    argv = sandbox_argv(["pytest", "-q"], POLICY, machine(True), launch(WS))
    assert "--unshare-user" not in argv  # bwrap is root here: no user namespace mapping back to root
    for flag in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"):
        assert flag in head(argv)
    inner = argv[argv.index("--") + 1 :]
    assert inner[:8] == [
        SETPRIV, "--reuid=1900000000", "--regid=1900000000", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
    ]  # fmt: skip
    assert inner[8] == PRLIMIT and inner[-2:] == ["pytest", "-q"]


def test_not_as_root_bwraps_own_user_namespace_is_used_and_no_further_one_allowed():
    argv = sandbox_argv(["ruff"], POLICY, machine(False), launch(WS, uid=1000))
    assert "--unshare-user" in head(argv) and "--disable-userns" in head(argv)
    assert SETPRIV not in argv  # the caller's own uid already; nothing to drop
    assert argv[argv.index("--") + 1] == PRLIMIT


def test_limits_are_set_inside_on_the_command():
    argv = sandbox_argv(["x"], POLICY, machine(True), launch(WS))
    limits = argv[argv.index(PRLIMIT) + 1 : argv.index("x")]
    assert limits == [
        "--nproc=32", f"--fsize={8 * 1024 * 1024}", "--cpu=7:8", f"--as={512 * 1024 * 1024}", "--core=0", "--",
    ]  # fmt: skip
    tmp = argv.index("/tmp", argv.index("--tmpfs") - 1)
    assert argv[tmp - 5 : tmp + 1] == ["--perms", "1777", "--size", str(64 * 1024 * 1024), "--tmpfs", "/tmp"]


def test_only_the_workspace_and_the_named_folders_are_writable():
    argv = sandbox_argv(["x"], POLICY, machine(True), launch(WS, REPORTS))
    assert pairs(argv, "--bind") == [WS, REPORTS]
    assert "--dev-bind" not in argv and "--bind-try" not in argv
    assert f"{WS}/.git" in pairs(argv, "--ro-bind-try")  # a hook planted there would run outside
    assert argv[argv.index("--chdir") + 1] == WS


def test_the_view_is_usr_the_python_a_few_etc_files_and_nothing_of_the_host_else():
    argv = sandbox_argv(["x"], POLICY, machine(True), launch(WS))
    shown = set(pairs(argv, "--ro-bind")) | set(pairs(argv, "--ro-bind-try")) | set(pairs(argv, "--bind"))
    assert {"/usr", PREFIX, VENV, WS, "/etc/ld.so.cache"} <= shown
    for never in ("/", "/etc", "/root", "/home", "/run", "/var", "/var/run", "/root/.chorus", "/sys"):
        assert never not in shown
    assert all(p.startswith(("/usr", "/etc/", PREFIX, VENV, WS)) for p in shown), shown
    assert pairs(argv, "--ro-bind-data") == ["/etc/passwd"]
    assert "--proc" in argv and "--dev" in argv


def test_mounts_go_parents_first_so_a_folder_inside_another_lies_on_top():
    # the venv inside the workspace stays read-only; the workspace's parents exist, readable
    host = Host("/usr/bin/bwrap", True, ("/srv/ws/.venv",), "/srv/ws/.venv/bin", (), (), "/root/.chorus")
    argv = sandbox_argv(["x"], POLICY, host, launch("/srv/ws"))
    assert argv.index("/srv/ws") < argv.index("/srv/ws/.venv")
    assert argv.index("--tmpfs") < argv.index("--dir")  # /tmp before anything under it
    srv = argv.index("/srv")
    assert argv[srv - 3 : srv + 1] == ["--perms", "0755", "--dir", "/srv"]  # not bwrap's default 0700


def test_a_data_directory_under_a_shown_folder_is_covered_by_an_empty_one():
    argv = sandbox_argv(["x"], POLICY, machine(True, data_dir=f"{WS}/data"), launch(WS))
    at = argv.index(f"{WS}/data")
    assert argv[at - 1] == "--tmpfs" and at > argv.index(WS)
    elsewhere = sandbox_argv(["x"], POLICY, machine(True), launch(WS))
    assert "/root/.chorus" not in elsewhere


def test_the_environment_is_an_allow_list(monkeypatch):
    for name in POLICY.env_allow:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("PATH", "/root/secret/bin")
    env = sandbox_env(POLICY, machine(True), {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert env == {
        "LANG": "C.UTF-8",
        "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "TMPDIR": "/tmp",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    argv = sandbox_argv(["x"], POLICY, machine(True), launch(WS))
    assert "--clearenv" in argv and argv.index("--clearenv") < argv.index("--setenv")


def test_the_made_up_etc_files_name_only_the_runs_user():
    files = etc_files(1_900_000_000, 1_900_000_000)
    assert "sandbox:x:1900000000:1900000000:sandbox:/tmp/home:/bin/sh" in files["/etc/passwd"]
    assert "localhost" in files["/etc/hosts"]


@pytest.mark.parametrize(
    "code, timed_out, stderr, duration, why",
    [
        (-9, True, "", 5.0, "timeout"),
        (-24, False, "", 1.0, "cpu"),
        (-9, False, "", 7.5, "cpu"),  # the hard CPU limit's SIGKILL
        (-25, False, "", 0.1, "file_size"),
        (1, False, "OSError: [Errno 27] File too large", 0.1, "file_size"),
        (1, False, "MemoryError", 0.1, "memory"),
        (-11, False, "", 0.1, "SIGSEGV"),
        (3, False, "", 0.1, None),
    ],
)
def test_why_a_command_stopped(code, timed_out, stderr, duration, why):
    assert _why_stopped(code, timed_out, stderr, duration, POLICY) == why


def test_describe_stop_names_the_limit():
    result = SandboxResult(("x",), 1, "", "", 0.1, False, "file_size")
    assert describe_stop(result, POLICY) == "file_size: wrote past its 8 MB file-size limit"
    assert result.network_isolated and result.note == ""


@pytest.mark.parametrize("field", ["cpu_s", "memory_mb", "max_processes", "max_file_mb", "tmp_mb"])
def test_a_bad_policy_is_refused(field):
    with pytest.raises(ValueError, match=field):
        SandboxPolicy(**{field: 0})
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxPolicy(timeout_s=0)
    with pytest.raises(ValueError, match="extra_ro"):
        SandboxPolicy(extra_ro=("relative/path",))
