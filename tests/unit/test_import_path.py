"""Import paths name a user's tool or agent with no packaging (issue 35)."""

from __future__ import annotations

import pytest

from actors.runtime.import_path import ImportPathError, import_object, is_import_path, path_of


def test_a_function_round_trips_through_its_path():
    assert import_object(path_of(import_object)) is import_object
    assert import_object("actors.runtime.import_path.import_object") is import_object


@pytest.mark.parametrize("bad", ["", "no spaces:here x", "1abc:x", "os:", ":x"])
def test_a_malformed_path_is_one_line(bad):
    with pytest.raises(ImportPathError) as e:
        import_object(bad)
    assert "\n" not in str(e.value)


def test_a_missing_module_or_name_says_which():
    with pytest.raises(ImportPathError, match="cannot import 'no_such_pkg_xyz.mod'.*installed"):
        import_object("no_such_pkg_xyz.mod:f")
    with pytest.raises(ImportPathError, match="has no 'nope'"):
        import_object("actors.runtime.import_path:nope")


def test_a_local_function_has_no_path():  # noqa: D103
    def inner():
        pass

    with pytest.raises(ValueError, match="top level"):
        path_of(inner)


def test_only_module_colon_name_reads_as_a_path():
    assert is_import_path("pkg.mod:fn") and not is_import_path("read_file") and not is_import_path("system:run script")


def test_a_script_run_as_main_names_itself_by_its_file(tmp_path):
    """`python path/to/script.py` defines its agent in __main__: its path is the script's
    module name, importable from the script's folder (as Ray's workers have it)."""
    import subprocess
    import sys

    script = tmp_path / "myscript.py"
    script.write_text(
        "from actors.runtime.import_path import import_object, path_of\n"
        "def fn():\n    return 42\n"
        "if __name__ == '__main__':\n"
        "    p = path_of(fn)\n    print(p, import_object(p)())\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["myscript:fn", "42"], done.stderr
    as_module = subprocess.run(
        [sys.executable, "-m", "myscript"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert as_module.stdout.split() == ["myscript:fn", "42"], as_module.stderr
