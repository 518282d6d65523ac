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


def test_a_local_function_has_no_path():
    def inner():
        pass

    with pytest.raises(ValueError, match="top level"):
        path_of(inner)


def test_only_module_colon_name_reads_as_a_path():
    assert is_import_path("pkg.mod:fn") and not is_import_path("read_file") and not is_import_path("system:run script")
