"""A plain-language request matched to an atomic task template (seed 001): the scoring alone,
then whole workflows in-process with scripted models."""

from __future__ import annotations

import pytest

from actors.runtime.replay import replay_run
from actors.tasks.matching import bind_params, match_template, score_templates, stem, words
from actors.tasks.runner import needs_llm, prepare
from actors.tasks.templates import builtin_sources, parse_template
from actors.tasks.workflow import task_stream
from tests.unit.test_tasks_workflow import execute, types

TEMPLATES = [parse_template(src) for src in dict(builtin_sources()).values()]
USER = [t for t in TEMPLATES if t.name != "associative-match"]

TRANSLATE = """<task name="translate-text">
  <description>Translate a text into another language.</description>
  <params><param name="text">the text to translate</param><param name="language">the target language</param></params>
  <instructions>Translate {{text}} into {{language}}.</instructions>
</task>"""


def test_words_are_stemmed_split_and_paths_left_out():
    assert stem("summarise") == stem("summarizes") == stem("summary") == stem("summarize")
    assert stem("evaluator") == stem("evaluate") == stem("evaluation")
    assert words("summarizeFile of the src/app.py please") == [stem("summarize"), "file"]


def test_the_highest_scoring_template_wins_and_says_why():
    match = match_template("Please summarise README.md for me", USER)
    assert match is not None and match.template == "summarize-file"
    assert match.params == {"path": "README.md"} and match.missing == []
    assert "summarize-file scores" in match.why and "summarise" in match.why
    assert [c.name for c in match.candidates][0] == "summarize-file"
    assert match.candidates[0].score > match.candidates[1].score


def test_a_request_no_template_explains_is_not_matched():
    assert match_template("what is the capital of France", USER) is None
    assert all(c.score == 0 for c in score_templates("what is the capital of France", USER))


def test_a_word_every_template_uses_weighs_less_than_a_rare_one():
    """'draft' is in both the director's and the evaluator's descriptions; 'evaluate' only in
    the evaluator's name: the evaluator wins."""
    ranked = score_templates("evaluate the draft", USER)
    assert ranked[0].name == "evaluator" and ranked[1].name == "director"


def test_explicit_params_win_and_missing_ones_are_named():
    translate = parse_template(TRANSLATE)
    params, missing = bind_params("translate hello into French", translate, {"language": "fr"})
    assert params == {"language": "fr"} and missing == ["text"]
    params, missing = bind_params("summarize it", next(t for t in USER if t.name == "summarize-file"), {})
    assert params == {} and missing == ["path"]  # a file parameter never takes the whole request


def test_ties_go_to_the_name_that_sorts_first():
    a = parse_template('<task name="b-task"><description>count lines</description><instructions>x</instructions></task>')
    b = parse_template('<task name="a-task"><description>count lines</description><instructions>x</instructions></task>')
    assert match_template("count the lines", [a, b]).template == "a-task"


def test_plain_words_are_a_request_not_bad_input():
    assert prepare("summarize README.md", workspace=".").kind == "request"
    assert prepare("summarize-file", workspace=".").kind == "task"
    assert needs_llm(prepare("summarize README.md", workspace="."))
    assert not needs_llm(prepare("what is the capital of France", workspace="."))


# -- whole workflows ------------------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path):
    """A folder with a README of its own: the repository's README grows, and the template's
    token limit would fail a test reading it."""
    (tmp_path / "README.md").write_text("# A project\n\nIt does one thing, and says so here.\n")
    return str(tmp_path)


def test_a_matched_request_runs_the_template_and_records_which_and_why(workspace):
    result, store, provider = execute("Summarize README.md please", ["It is the project's front page."], workspace=workspace)
    assert result.status == "COMPLETE" and result.content == "It is the project's front page."
    assert provider.calls == 1 and "Summarize the file README.md" in provider.requests[0].messages[-1]["content"]
    events = store.read_stream(task_stream("w1"))
    matched = next(e for e in events if e.type_name == "TemplateMatched")
    assert matched.template == "summarize-file" and matched.params == {"path": "README.md"}
    assert matched.why.startswith("summarize-file scores") and matched.candidates[0]["name"] == "summarize-file"
    called = next(e for e in events if e.type_name == "TaskCalled")
    assert called.task == "summarize-file" and events.index(matched) < events.index(called)
    report = replay_run(store, "w1")
    assert report.ok and report.events > 0


def test_no_template_matched_is_a_structured_failure_with_no_model_call():
    result, store, provider = execute("what is the capital of France", [])
    assert result.status == "FAILED" and provider.calls == 0
    assert result.error.type == "task_not_found" and result.error.reason == "no_template_matched"
    assert "capital of France" in result.error.message and "\n" not in result.error.message
    assert "TemplateMatched" not in types(store) and "TaskCalled" not in types(store)


def test_a_match_missing_a_required_parameter_fails_and_names_it():
    result, store, provider = execute("summarize the file", [])
    assert result.status == "FAILED" and provider.calls == 0
    assert result.error.reason == "missing_params" and "path" in result.error.message
    assert "TemplateMatched" in types(store)


@pytest.mark.parametrize("given", [{"path": "README.md"}])
def test_explicit_params_complete_a_match(given, workspace):
    result, _, provider = execute("summarize the file", ["A summary."], params=given, workspace=workspace)
    assert result.status == "COMPLETE" and provider.calls == 1
