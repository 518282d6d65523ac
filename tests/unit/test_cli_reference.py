"""The generated references cannot drift: docs/cli.md is what the `chorus` parser generates and
docs/http-api.md what the HTTP app's OpenAPI document generates (regenerate both with
`python -m actors.cli.reference`); every verb and flag has help text; the CLI speaks one
dialect (the same flag for the same thing, old spellings only as hidden aliases)."""

from __future__ import annotations

import argparse

import pytest

from actors.cli import reference
from actors.cli.main import _parser

REGENERATE = "stale: run `python -m actors.cli.reference` and commit the page"


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return _parser()


def test_the_committed_cli_page_is_what_the_parser_generates(parser):
    assert reference.CLI_PAGE.read_text(encoding="utf-8") == reference.cli_markdown(parser), REGENERATE


def test_the_committed_http_page_is_what_the_openapi_document_generates():
    app = reference.build_app()
    try:
        text = reference.http_markdown(app)
    finally:
        app.state.chorus.close()
    assert reference.HTTP_PAGE.read_text(encoding="utf-8") == text, REGENERATE


def test_every_verb_and_flag_has_help_text(parser):
    assert reference.missing_help(parser) == []


def test_missing_help_is_found():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    verb = sub.add_parser("look")  # no help
    verb.add_argument("--far")  # no help
    verb.add_argument("--old", help=argparse.SUPPRESS)  # a hidden alias: fine
    assert reference.missing_help(p) == ["chorus look", "chorus look --far"]


def _visible_options(parser) -> dict[str, set[str]]:
    return {
        " ".join(path): {o for a in reference.arguments(sub) if not reference.hidden(a) for o in a.option_strings}
        for path, _, sub in reference.verbs(parser)
    }


def test_one_spelling_per_thing(parser):
    """A folder is `--root`, an output file `--out`: the old spellings show nowhere."""
    shown = _visible_options(parser)
    for verb, options in shown.items():
        assert not options & {"--repo", "--repos", "--workspace"}, verb
    assert {v for v, o in shown.items() if "--root" in o} >= {"run", "ask", "research", "relay", "task"}
    assert "--out" in shown["audit export"]


def test_read_verbs_have_json(parser):
    shown = _visible_options(parser)
    reads = (
        "runs", "events", "log", "state", "replay", "diff", "model", "escalations", "research",
        "snapshot", "projections status", "audit events", "audit llm-calls", "audit usage",
        "audit verify", "sim show", "sim usage", "sim sessions",
    )  # fmt: skip
    assert [v for v in reads if "--json" not in shown[v]] == []


@pytest.mark.parametrize(
    "old, new, dest",
    [
        (["ask", "q", "--repos", "D"], ["ask", "q", "--root", "D"], "repos"),
        (["research", "q", "--repo", "D"], ["research", "q", "--root", "D"], "repo"),
        (["relay", "g", "--workspace", "D"], ["relay", "g", "--root", "D"], "workspace"),
        (["task", "(+ 1 2)", "--workspace", "D"], ["task", "(+ 1 2)", "--root", "D"], "workspace"),
    ],
)
def test_old_spellings_are_hidden_aliases(parser, old, new, dest):
    assert str(getattr(parser.parse_args(old), dest)) == str(getattr(parser.parse_args(new), dest)) == "D"


def test_defaults_survive_the_aliases(parser):
    assert parser.parse_args(["task", "(+ 1 2)"]).workspace == "."
    assert parser.parse_args(["run", "goal"]).root == "."
    assert parser.parse_args(["ask", "q"]).repos is None  # cmd_ask says: give --root DIR
