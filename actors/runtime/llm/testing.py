"""Deprecated: the scripted model moved to `actors.testing` (`from actors.testing import
ScriptedProvider`). This module only re-exports it, so older imports keep working."""

from __future__ import annotations

import warnings

from actors.testing.model import ScriptedProvider, _estimate_tokens

__all__ = ["ScriptedProvider", "_estimate_tokens"]

warnings.warn(
    "actors.runtime.llm.testing is deprecated: import ScriptedProvider from actors.testing",
    DeprecationWarning,
    stacklevel=2,
)
