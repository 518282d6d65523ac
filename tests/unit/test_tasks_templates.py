"""Atomic task templates (seed 001): schema validation at registration, {{param}} substitution,
and the TaskSystem's parameter checks — no model is ever sent a literal {{x}}."""

from __future__ import annotations

import pytest

from actors.testing.model import ScriptedProvider
from actors.tasks.runner import prepare, serve, submit
from actors.tasks.task_system import TaskSystem
from actors.tasks.templates import (
    MissingParam,
    TemplateError,
    builtin_sources,
    load_dir,
    parse_template,
    substitute,
)
from events.store import EventStore

GOOD = """<task name="greet" version="1">
  <description>Say hello.</description>
  <params>
    <param name="who" required="true">whom to greet</param>
    <param name="tone" default="warm"/>
    <param name="extra" required="false"/>
  </params>
  <context inherit="true" fresh="false"/>
  <system>You greet people in a {{tone}} tone.</system>
  <instructions>Greet {{who}}.</instructions>
  <output format="json"><schema>{"type": "object"}</schema></output>
  <limits turns="2" tokens="500"/>
</task>"""


def test_a_good_template_parses_into_its_parts():
    t = parse_template(GOOD)
    assert (t.name, t.description, t.inherit_context, t.fresh_context) == ("greet", "Say hello.", True, False)
    assert [(p.name, p.required, p.default) for p in t.params] == [
        ("who", True, None), ("tone", False, "warm"), ("extra", False, None),
    ]  # fmt: skip
    assert (t.output_format, t.output_schema, t.max_turns, t.max_tokens) == ("json", {"type": "object"}, 2, 500)


def test_the_shipped_templates_are_valid():
    sources = builtin_sources()
    assert {"summarize-file", "associative-match", "director", "evaluator"} <= set(sources)
    for name, source in sources.items():
        assert parse_template(source).name == name


@pytest.mark.parametrize(
    "source, message",
    [
        ("this is not XML", "not well-formed XML at line 1, column 1"),
        ("<task name='x'><instructions>a</task>", "not well-formed XML at line 1, column 33: mismatched tag"),
        ("", "not well-formed XML"),
        ('<!DOCTYPE t [<!ENTITY a "b">]><task name="x"><instructions>&a;</instructions></task>', "DOCTYPE and ENTITY"),
        ("<tasks name='x'/>", "the root element must be <task>, not <tasks>"),
        ("<task><instructions>a</instructions></task>", "<task> needs the attribute 'name'"),
        ("<task name='1x'><instructions>a</instructions></task>", "is not a valid name"),
        ("<task name='x'/>", "<task> needs a <instructions> element"),
        ("<task name='x'><instructions>  </instructions></task>", "<instructions> is empty"),
        ("<task name='x'><instructions>a</instructions><instructions>b</instructions></task>", "at most 1 <instructions>"),
        ("<task name='x'><prompt>a</prompt><instructions>a</instructions></task>", "<prompt> is not allowed in <task>"),
        ("<task name='x' owner='me'><instructions>a</instructions></task>", "no attribute 'owner'"),
        ("<task name='x'><instructions>a</instructions><limits turns='0'/></task>", "turns='0' must be a positive integer"),
        ("<task name='x'><instructions>a</instructions><limits tokens='lots'/></task>", "must be a positive integer"),
        ("<task name='x'><instructions>a</instructions><output format='yaml'/></task>", "must be text or json"),
        ("<task name='x'><instructions>a</instructions><context fresh='yes'/></task>", "must be true or false"),
        ("<task name='x'><instructions>hi {{who}}</instructions></task>", "uses {{who}} but no <param name=\"who\">"),
        ("<task name='x'><params><param name='a'/><param name='a'/></params><instructions>a</instructions></task>", "declared twice"),
        ("<task name='x'><params><param name='a b'/></params><instructions>a</instructions></task>", "not a valid parameter name"),
        ("<task name='x'><instructions>a</instructions><output format='json'><schema>{nope</schema></output></task>", "not valid JSON"),
        ("<task name='x'><instructions>a</instructions><output><schema>{}</schema></output></task>", "format is 'text'"),
        ("<task name='x'>stray<instructions>a</instructions></task>", "takes no text"),
    ],
)
def test_bad_templates_are_refused_with_the_reason(source, message):
    with pytest.raises(TemplateError) as info:
        parse_template(source, "bad.xml")
    assert str(info.value).startswith("bad.xml: ")
    assert message in str(info.value)


def test_an_llm_may_not_be_handed_the_script_tool():
    tasks = TaskSystem(handler_factory=lambda t: None)  # type: ignore[arg-type,return-value]
    source = "<task name='x'><tools><tool name='system:run_script'/></tools><instructions>a</instructions></task>"
    with pytest.raises(TemplateError, match="may not be given system:run_script"):
        tasks.register_template(source, "x.xml")
    assert tasks.find_template("x") is None


def test_load_dir_names_the_bad_file(tmp_path):
    (tmp_path / "good.xml").write_text(GOOD)
    assert set(load_dir(tmp_path)) == {"greet"}
    (tmp_path / "zbad.xml").write_text("<task name='y'><instructions>oops</task>")
    with pytest.raises(TemplateError, match=r"zbad.xml: not well-formed XML at line 1, column 36"):
        load_dir(tmp_path)
    with pytest.raises(TemplateError, match="does not exist"):
        load_dir(tmp_path / "missing")


# -- substitution ------------------------------------------------------------------------------


def test_substitution_fills_from_params_only():
    assert substitute("Hi {{ who }}, {{n}} times: {{data}}", {"who": "Ada", "n": 3, "data": {"a": [1]}}) == (
        'Hi Ada, 3 times: {"a": [1]}'
    )


def test_a_missing_param_raises_and_a_value_is_never_expanded_twice():
    with pytest.raises(MissingParam, match=r"\{\{who\}\}"):
        substitute("Hi {{who}}", {})
    with pytest.raises(MissingParam):
        substitute("Hi {{who}}", {"who": None})
    assert substitute("{{a}} {{b}}", {"a": "{{b}}", "b": "x"}) == "{{b}} x"


# -- the task system's parameter checks, end to end with a scripted model ----------------------


def run_task(name, params, templates=None, replies=("fine",)):
    store = EventStore("memory://")
    start = prepare(name, params=params, templates=templates or {"greet": GOOD}, workspace=".")
    submit(store, "t1", start)
    provider = ScriptedProvider(list(replies))
    return serve(store, "t1", start, provider), provider


def test_required_param_missing_is_a_failed_result_and_no_model_call():
    result, provider = run_task("greet", {})
    assert result.status == "FAILED"
    assert result.error.type == "template_error" and result.error.reason == "missing_param"
    assert "greet needs the parameter 'who'" in result.error.message
    assert provider.calls == 0


def test_unknown_param_is_a_failed_result():
    result, provider = run_task("greet", {"who": "Ada", "whom": "Bob"})
    assert (result.status, result.error.reason) == ("FAILED", "unknown_param")
    assert "greet has no parameter 'whom'" in result.error.message and provider.calls == 0


def test_an_optional_param_with_no_value_in_the_text_fails_rather_than_reaching_the_model():
    source = GOOD.replace("Greet {{who}}.", "Greet {{who}} {{extra}}.")
    result, provider = run_task("greet", {"who": "Ada"}, templates={"greet": source})
    assert (result.status, result.error.reason) == ("FAILED", "missing_param")
    assert "{{extra}}" in result.error.message and provider.calls == 0


def test_defaults_fill_in_and_the_model_sees_substituted_text_only():
    result, provider = run_task("greet", {"who": "Ada"}, replies=['{"greeting": "Hello Ada"}'])
    assert result.status == "COMPLETE" and result.content == {"greeting": "Hello Ada"}
    request = provider.requests[0]
    assert request.messages[0]["content"] == "You greet people in a warm tone."
    assert "Greet Ada." in request.messages[-1]["content"]
    assert all("{{" not in m["content"] for m in request.messages)
    assert request.response_schema == {"type": "object"}


def test_a_user_template_replaces_a_builtin_of_the_same_name():
    mine = "<task name='director'><instructions>my own director</instructions></task>"
    result, provider = run_task("director", {}, templates={"director": mine}, replies=["ok"])
    assert result.ok and provider.requests[0].messages[-1]["content"] == "my own director"
