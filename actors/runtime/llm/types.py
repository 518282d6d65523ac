"""What crosses the LLM door: a request, its result, and the two ways it can go wrong.

A request is hashed over everything that shapes the answer (model, messages, parameters,
schema), so replay can tell "the same question" from "a different one" by one string.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr

from events.errors import ErrorInfo

M = TypeVar("M", bound=BaseModel)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class LlmRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any] = {}
    response_schema: dict[str, Any] | None = None

    _hash: str | None = PrivateAttr(default=None)

    def hash(self) -> str:  # noqa: A003 - the word the design uses
        """SHA-256 hex of the canonical JSON of all four fields (computed once: the request is
        frozen, and a call's fingerprint, its `LlmRequested` and a replay's check all ask)."""
        if self._hash is None:
            self._hash = hashlib.sha256(canonical_json(self.model_dump(mode="json")).encode()).hexdigest()
        return self._hash

    def __eq__(self, other: object) -> bool:
        """Equal when the four fields are (whether either has computed its hash yet or not)."""
        if not isinstance(other, LlmRequest):
            return NotImplemented
        return (self.model, self.messages, self.params, self.response_schema) == (
            other.model, other.messages, other.params, other.response_schema,
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]  # its lists and dicts make it unhashable anyway

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> LlmRequest:
        """A copy; its hash is computed anew (its fields may differ)."""
        copy = super().model_copy(update=update, deep=deep)
        copy._hash = None
        return copy

    @classmethod
    def from_recorded(cls, event: Any) -> LlmRequest:
        """The request an `LlmRequested` event recorded."""
        return cls(
            model=event.model,
            messages=list(event.messages),
            params=dict(event.params),
            response_schema=event.response_schema,
        )


class LlmResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    content: str
    parsed: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str = ""
    cost_usd: float | None = None
    # The real failures (refused connection, 5xx, 429, a stream broken off) retried before
    # this answer came, in order; empty when the first attempt answered.
    retries: list[ErrorInfo] = []

    def parse_as(self, model_cls: type[M]) -> M:
        """The parsed output validated as a pydantic model (the seeds' `.parse()`).

        Raises pydantic's ValidationError (or ValueError when nothing parsed): the caller
        decides whether that is a retry, an observation or a failure.
        """
        if self.parsed is None:
            raise ValueError(f"the model's reply is not a JSON object: {self.content[:200]!r}")
        return model_cls.model_validate(self.parsed)


class LlmError(Exception):
    """An expected failure of a call (endpoint down, timeout, ...): becomes `LlmFailed`."""

    REASONS: ClassVar[tuple[str, ...]] = (
        "timeout",
        "unreachable",
        "rate_limited",
        "server_error",
        "bad_request",
    )

    def __init__(self, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        if reason not in self.REASONS:
            raise ValueError(f"LlmError reason {reason!r} is not one of {self.REASONS}")
        self.error = ErrorInfo(type="llm_error", reason=reason, message=message, details=details)
        super().__init__(self.error.line())

    @classmethod
    def from_info(cls, error: ErrorInfo) -> LlmError:
        return cls(error.reason, error.message, error.details)

    @property
    def reason(self) -> str:
        return self.error.reason

    def __reduce__(self) -> tuple[Any, ...]:  # survive pickling across Ray
        return (type(self), (self.error.reason, self.error.message, self.error.details))


class ReplayDivergence(Exception):
    """A replay asked for something the log does not hold. Fails closed: never a live call."""

    def __init__(
        self,
        call_index: int,
        expected_hash: str | None,
        actual_hash: str,
        diff: str = "",
    ) -> None:
        self.call_index = call_index
        self.expected_hash = expected_hash
        self.actual_hash = actual_hash
        self.diff = diff
        if expected_hash is None:
            head = (
                f"replay diverged at LLM call {call_index}: the recording holds no such call "
                f"(it is exhausted); actual request hash {actual_hash[:12]}"
            )
        else:
            head = (
                f"replay diverged at LLM call {call_index}: expected request hash "
                f"{expected_hash[:12]}, actual {actual_hash[:12]}"
            )
        super().__init__(head + (f"\n{diff}" if diff else ""))

    @classmethod
    def between(
        cls, call_index: int, recorded: LlmRequest | None, recorded_hash: str | None, actual: LlmRequest
    ) -> ReplayDivergence:
        diff = describe_difference(recorded, actual) if recorded is not None else ""
        return cls(call_index, recorded_hash, actual.hash(), diff)

    @property
    def error(self) -> ErrorInfo:
        return ErrorInfo(
            type="replay_divergence",
            reason="exhausted" if self.expected_hash is None else "request_mismatch",
            message=str(self).splitlines()[0],
            details={
                "call_index": self.call_index,
                "expected_hash": self.expected_hash,
                "actual_hash": self.actual_hash,
                "diff": self.diff,
            },
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.call_index, self.expected_hash, self.actual_hash, self.diff))


class RecordEdited(ReplayDivergence):
    """A recorded request whose text no longer matches the hash stored with it: the log was
    edited after it was written. Nothing it recorded is served."""

    def __init__(self, call_index: int, expected_hash: str | None, actual_hash: str, diff: str = "") -> None:
        super().__init__(call_index, expected_hash, actual_hash, diff)
        self.args = (
            f"replay refused LLM call {call_index}: the recorded request's text hashes to {actual_hash[:12]}, "
            f"not to the hash stored with it ({(expected_hash or '')[:12]}); the log was edited",
        )

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def error(self) -> ErrorInfo:
        info = super().error
        return info.model_copy(update={"reason": "edited_record"})


def check_recorded(recorded: Any) -> None:
    """Before serving what answered a recorded request, check its text against its stored hash
    (`RecordEdited` if they differ)."""
    actual = LlmRequest.from_recorded(recorded).hash()
    if actual != recorded.request_hash:
        raise RecordEdited(recorded.call_index, recorded.request_hash, actual)


def describe_difference(recorded: LlmRequest, actual: LlmRequest, limit: int = 800) -> str:
    """Which fields differ, and a short unified diff of the last message."""
    lines: list[str] = []
    for field in ("model", "params", "response_schema"):
        a, b = getattr(recorded, field), getattr(actual, field)
        if canonical_json(a) != canonical_json(b):
            lines.append(f"{field}: recorded {canonical_json(a)[:120]} != actual {canonical_json(b)[:120]}")
    if len(recorded.messages) != len(actual.messages):
        lines.append(f"messages: recorded {len(recorded.messages)}, actual {len(actual.messages)}")
    for i, (a, b) in enumerate(zip(recorded.messages, actual.messages, strict=False)):
        if canonical_json(a) != canonical_json(b) and i < len(recorded.messages) - 1:
            lines.append(f"messages[{i}] differs too (role {a.get('role')!r})")
            break

    def text(messages: list[dict[str, Any]]) -> list[str]:
        if not messages:
            return []
        last = messages[-1]
        content = last.get("content")
        body = content if isinstance(content, str) else canonical_json(content)
        return [f"[{last.get('role', '?')}]"] + body.splitlines()

    diff = list(
        difflib.unified_diff(
            text(recorded.messages), text(actual.messages), "recorded", "actual", n=1, lineterm=""
        )
    )
    if diff:
        lines.append("last message:")
        lines.extend(diff)
    out = "\n".join(lines)
    return out if len(out) <= limit else out[: limit - 4] + " ..."
