"""Secrets never reach the log: the values of secret-looking environment variables are
replaced by `[REDACTED:NAME]` in every event before it is first appended.

The log is exported, shared and kept as test fixtures, while tool output and model replies
can carry whatever a script printed or a model echoed. So the recording process redacts
what it knows to be secret — the values of its own environment variables whose names look
secret (`*_API_KEY`, `*_SECRET*`, `*_TOKEN`, `*PASSWORD*`, ...) — at the runtime's append
chokepoints (`ActorShell.record`, `ToolContext.complete`). A replay compares redacted with
redacted: it is served the redacted record, and what it derives from it redacts to the same.

An `LlmRequested` whose messages changed gets the hash of its redacted request (and the
`LlmCompleted`/`LlmFailed` of that call the same hash), because a replay rebuilds the request
from redacted inputs and matches it by that hash.

Only exact values are caught (also as they appear inside JSON strings); an encoded, split or
transformed secret (base64, one character per line, ...) is not.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from actors.runtime.llm.types import LlmRequest
from events.base import Event
from events.effects import LlmCompleted, LlmFailed, LlmRequested

SECRET_NAMES = frozenset({"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "CHORUS_LLM_API_KEY"})
_SECRET_NAME = re.compile(
    r"(^|_)(API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET\w*|\w*TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)($|_)"
)
MIN_SECRET_CHARS = 6
NOT_SECRET = frozenset({"not-needed"})
_REHASHED_KEEP = 1_000


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in SECRET_NAMES or _SECRET_NAME.search(upper) is not None


def secrets_in(environ: Mapping[str, str]) -> dict[str, str]:
    """The secret values an environment holds, by variable name (short and placeholder values
    are left out: redacting "true" or "1234" would mangle ordinary text)."""
    return {
        name: value
        for name, value in environ.items()
        if is_secret_name(name) and len(value) >= MIN_SECRET_CHARS and value not in NOT_SECRET
    }


class Redactor:
    """Replaces known secret values in strings, longest first. Built once per set of secrets;
    with none, `redact_event` returns its event untouched without looking at it."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        forms: dict[str, str] = {}
        for name, value in sorted(secrets.items()):
            forms.setdefault(value, name)
            escaped = json.dumps(value, ensure_ascii=False)[1:-1]  # as it appears inside a JSON string
            forms.setdefault(escaped, name)
            forms.setdefault(json.dumps(value)[1:-1], name)
        self._names = forms
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in sorted(forms, key=len, reverse=True))) if forms else None
        )
        # Hash of a request as it was sent -> hash of it redacted, so the completion recorded
        # in a later append still names its request (bounded: entries only for changed requests).
        self._rehashed: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(lambda m: f"[REDACTED:{self._names[m.group(0)]}]", value)

    def value(self, value: Any) -> Any:
        """A payload value with every string in it redacted (dict keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(v) for v in value)
        return value

    def redact_event(self, event: Event) -> Event:
        if self._pattern is None:
            return event
        payload = event.payload()
        changed = {k: v2 for k, v in payload.items() if (v2 := self.value(v)) != v}
        if isinstance(event, LlmRequested) and changed:
            redacted = event.model_copy(update=changed)
            new_hash = LlmRequest.from_recorded(redacted).hash()
            self._remember(event.request_hash, new_hash)
            changed["request_hash"] = new_hash
        elif isinstance(event, (LlmCompleted, LlmFailed)):
            with self._lock:
                new_hash = self._rehashed.get(event.request_hash)
            if new_hash is not None:
                changed["request_hash"] = new_hash
        if not changed:
            return event
        # Validate again, so nested models (an ErrorInfo, ...) are models, not dicts.
        return type(event).model_validate({**event.model_dump(mode="python"), **changed})

    def redact_events(self, events: list[Event]) -> list[Event]:
        if self._pattern is None:
            return events
        return [self.redact_event(e) for e in events]

    def _remember(self, old: str, new: str) -> None:
        with self._lock:
            self._rehashed[old] = new
            self._rehashed.move_to_end(old)
            while len(self._rehashed) > _REHASHED_KEEP:
                self._rehashed.popitem(last=False)


_NONE = Redactor({})
_current: tuple[tuple[tuple[str, str], ...], Redactor] = ((), _NONE)
_environ_seen: dict[Any, Any] | None = None  # os.environ's raw map when `_current` was made


def redactor(environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor for this process's environment now (or for `environ`). Rebuilt only when
    the secret values changed; the usual case is one dictionary scan and a cached answer."""
    global _current, _environ_seen
    if environ is None:
        # os.environ's own bytes/str map compares in C (~1 µs); decoding every item to scan
        # the names costs ~50-70 µs, paid on every append by the shell before this.
        data = getattr(os.environ, "_data", None)
        if data is not None and data == _environ_seen:
            return _current[1]
        _environ_seen = dict(data) if data is not None else None
    else:
        _environ_seen = None  # `_current` is about to be another environment's
    found = secrets_in(os.environ if environ is None else environ)
    key = tuple(sorted(found.items()))
    cached_key, cached = _current
    if key == cached_key:
        return cached
    made = Redactor(found) if found else _NONE
    _current = (key, made)
    return made


def redact_events(events: list[Event]) -> list[Event]:
    """Events as they may be recorded: known secret values replaced by `[REDACTED:NAME]`."""
    return redactor().redact_events(events)
