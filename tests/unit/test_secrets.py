"""The redactor (actors.runtime.secrets): which variables are secrets, what it replaces, and
that a redacted LLM call still pairs request and completion by hash."""

from __future__ import annotations

import json

from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest
from actors.runtime.run import RunLifecycle, Submit, run_stream
from actors.runtime.secrets import Redactor, redactor, secrets_in
from actors.runtime.shell import ActorShell
from events.effects import ToolReturned
from events.errors import ErrorInfo
from events.store import EventStore

SECRET = "sk-unit-4f9e2a7c51"


def test_secret_looking_names_are_picked_and_short_or_placeholder_values_ignored():
    env = {
        "OPENAI_API_KEY": "sk-abcdef123",
        "AWS_SECRET_ACCESS_KEY": "aws/secret+value",
        "CHORUS_LLM_API_KEY": "not-needed",
        "GITHUB_TOKEN": "ghp_0123456789",
        "DB_PASSWORD": "hunter2hunter2",
        "MY_SECRET_THING": "shhhhhhh",
        "SHORT_TOKEN": "abc",
        "TOKENIZERS_PARALLELISM": "false-ish-long",
        "PWD": "/home/someone",
        "PATH": "/usr/bin:/bin",
    }
    assert set(secrets_in(env)) == {"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET_THING"}


def test_values_are_replaced_by_their_name_also_inside_json_strings_and_nested():
    r = Redactor({"X_API_KEY": 'ab"cd\\ef', "Y_TOKEN": SECRET})
    inner = json.dumps({"stdout": f"key=ab\"cd\\ef and {SECRET}"})
    event = ToolReturned(
        tool="system:run_script", call_index=1, ok=False, output=inner,
        error=ErrorInfo(type="tool_error", reason="bad", message=f"not {SECRET!r}", details={SECRET: [SECRET]}),
    )
    out = r.redact_event(event)
    assert SECRET not in out.model_dump_json() and "ab" not in out.output
    assert json.loads(out.output)["stdout"] == "key=[REDACTED:X_API_KEY] and [REDACTED:Y_TOKEN]"
    assert isinstance(out.error, ErrorInfo) and out.error.message == "not '[REDACTED:Y_TOKEN]'"
    assert out.error.details == {"[REDACTED:Y_TOKEN]": ["[REDACTED:Y_TOKEN]"]}
    assert (out.event_id, out.call_index) == (event.event_id, 1)


def test_without_secrets_events_pass_through_untouched():
    events = [ToolReturned(tool="t", call_index=1, ok=True, output=SECRET)]
    assert redactor({"PATH": "/bin"}).redact_events(events) is events
    assert not redactor({})


def test_a_redacted_llm_call_keeps_request_and_completion_paired_by_the_redacted_hash():
    r = Redactor({"Y_TOKEN": SECRET})
    request = LlmRequest(model="m", messages=[{"role": "user", "content": f"repeat {SECRET}"}])
    outcome = LlmGateway(ScriptedProvider([f"it is {SECRET}"])).call(request, 1)
    requested = r.redact_event(outcome.events[0])
    completed = r.redact_event(outcome.events[1])  # recorded in a later append
    as_replayed = LlmRequest(model="m", messages=[{"role": "user", "content": "repeat [REDACTED:Y_TOKEN]"}])
    assert requested.request_hash == completed.request_hash == as_replayed.hash() != request.hash()
    assert completed.content == "it is [REDACTED:Y_TOKEN]"


def test_the_shell_records_no_secret_and_folds_the_redacted_event(monkeypatch):
    monkeypatch.setenv("CHORUS_UNIT_API_KEY", SECRET)
    with EventStore("memory://") as store:
        shell = ActorShell(RunLifecycle(), run_stream("r1"), store, run_id="r1")
        shell.handle(Submit(key="submit", goal=f"use {SECRET}", kind="task", params={"p": SECRET}))
        stored = store.read_stream(run_stream("r1"))
    assert SECRET not in stored[0].model_dump_json()
    assert "[REDACTED:CHORUS_UNIT_API_KEY]" in stored[0].model_dump_json()
    assert SECRET not in shell.state.model_dump_json()


def test_the_cached_redactor_follows_the_environment(monkeypatch):
    """The process's redactor is cached while os.environ is unchanged: a secret set, changed
    or removed after a call is seen by the next one."""
    monkeypatch.delenv("CHORUS_UNIT2_TOKEN", raising=False)
    before = redactor()
    assert redactor() is before  # unchanged environment: the cached answer
    monkeypatch.setenv("CHORUS_UNIT2_TOKEN", SECRET)
    assert redactor().value(f"x {SECRET}") == "x [REDACTED:CHORUS_UNIT2_TOKEN]"
    monkeypatch.setenv("CHORUS_UNIT2_TOKEN", "tok-" + SECRET[::-1])
    assert redactor().value(f"x {SECRET}") == f"x {SECRET}"
    assert redactor(dict(CHORUS_UNIT2_TOKEN=SECRET)).value(SECRET) == "[REDACTED:CHORUS_UNIT2_TOKEN]"
    monkeypatch.delenv("CHORUS_UNIT2_TOKEN")
    assert "CHORUS_UNIT2_TOKEN" not in redactor().value(f"{SECRET} tok-{SECRET[::-1]}")
