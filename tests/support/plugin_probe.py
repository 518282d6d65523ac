"""A module CHORUS_PLUGINS imports in a test (tests/integration/test_unknown_plugin.py)."""

IMPORTED = True
