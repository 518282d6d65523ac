"""Tools as plain functions (`@tool`, actors/runtime/function_tool.py): name, schema and
description from the signature and docstring; the model's arguments validated (a mismatch is a
failed call, one line); the run's folder by a `Workspace` parameter; found by import path with
no entry point; a bad tool named to `submit` or `chorus run` is one line before anything is
written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import cloudpickle
import pytest

from actors import Workspace, tool
from actors.agent.kind import tool_spec
from actors.runtime.function_tool import (
    FunctionTool,
    ToolArgumentsError,
    ToolDefinitionError,
    tool_of,
    tool_ref,
)
from actors.runtime.perform import LiveEffects, local_invoker
from actors.runtime.registry import Registry, RegistryError, Tool
from actors.runtime.settings import Settings
from actors.runtime.tool_context import ToolContext
from tests.support import user_tools

EXAMPLE = "examples.tools.word_count:word_count"


# -- what the signature and docstring give ------------------------------------------------------


def test_name_schema_and_description_come_from_the_signature_and_docstring():
    cls = tool_of(user_tools.count_words)
    assert issubclass(cls, FunctionTool) and issubclass(cls, Tool)
    assert cls.name == "count_words"
    assert cls.description == "Count the words in a text."  # the first paragraph only
    assert cls.signature() == "count_words(text: str, unique: bool = False)"
    schema = cls.parameters()
    assert schema["properties"] == {
        "text": {"title": "Text", "type": "string"},
        "unique": {"default": False, "title": "Unique", "type": "boolean"},
    }
    assert schema["required"] == ["text"] and schema["additionalProperties"] is False
    assert Registry.tool_class("count_words") is cls


def test_the_decorated_function_is_still_the_function():
    assert user_tools.count_words("a b a", unique=True) == "2 words"
    assert user_tools.count_words.__name__ == "count_words"


def test_name_and_description_can_be_given():
    cls = tool_of(user_tools.count_lines)
    assert cls.name == "lines_in" and Registry.tool_class("lines_in") is cls
    assert cls.parameters()["properties"]["path"]["description"] == "a file under the run's folder"

    @tool(description="Shout it.")
    def shout(text: str, times: int = 1) -> str:
        """Not this."""
        return text.upper() * times

    assert tool_of(shout).description == "Shout it."
    assert tool_of(shout).signature() == "shout(text: str, times: int = 1)"


def test_a_function_with_positional_only_or_star_parameters_is_refused():
    def star(*words: str) -> str:
        return ""

    def slash(text: str, /) -> str:
        return text

    for f in (star, slash):
        with pytest.raises(ToolDefinitionError, match="must be a named one"):
            tool(f)


# -- the model's arguments --------------------------------------------------------------------


def test_arguments_are_validated_and_coerced_leniently():
    t = tool_of(user_tools.count_words)()
    assert t.execute(text="a b a", unique="true") == "2 words"  # a small model's "true"
    assert t.execute(text=12) == "1 words"  # a number where text is wanted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "count_words: argument 'text' is missing; call it as count_words(text: str, unique: bool = False)"),
        ({"text": "a", "file": "x"}, "count_words: it takes no argument 'file'; call it as"),
        ({"text": "a", "unique": "perhaps"}, "count_words: argument 'unique': Input should be a valid boolean"),
    ],
)
def test_arguments_that_do_not_fit_are_a_failed_call_with_one_line(args, message):
    t = tool_of(user_tools.count_words)()
    with pytest.raises(ToolArgumentsError) as raised:
        t.execute(**args)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)
    # As the agent runs it: an observation for the model, not a crash.
    called, returned = LiveEffects(None, local_invoker({"count_words": t})).tool("count_words", args, 1)
    assert not returned.ok and returned.output == f"Error: {raised.value}"
    assert returned.error.reason == "ToolArgumentsError"


def test_results_become_observation_text():
    @tool
    def numbers(n: int) -> dict:
        """Some numbers."""
        return {"n": n, "square": n * n}

    @tool
    async def later(n: int) -> int:
        """Later."""
        await asyncio.sleep(0)
        return n + 1

    assert tool_of(numbers)().execute(n="3") == '{"n": 3, "square": 9}'
    assert tool_of(later)().execute(n=1) == "2"
    assert tool_of(user_tools.count_lines)(root=".").execute(path="pyproject.toml").isdigit()


# -- what the run gives ----------------------------------------------------------------------


def test_a_workspace_parameter_gets_the_runs_folder_and_is_never_shown(tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    cls = tool_of(user_tools.count_lines)
    assert "root" not in cls.parameters()["properties"] and "root" not in cls.signature()
    assert cls(root=str(tmp_path)).execute(path="notes.txt") == "3"
    with pytest.raises(ToolArgumentsError, match="takes no argument 'root'"):
        cls(root=str(tmp_path)).execute(path="notes.txt", root="/")  # the model cannot choose it
    with pytest.raises(ValueError, match="outside the run's folder"):
        cls(root=str(tmp_path)).execute(path="../../etc/passwd")
    with pytest.raises(RuntimeError, match="needs the run's folder"):
        cls().execute(path="notes.txt")


def test_a_tool_context_parameter_makes_a_tool_that_uses_the_context():
    @tool
    def ask(question: str, context: ToolContext) -> str:
        """Ask the model."""
        return f"{question} via {context.tool}"

    cls = tool_of(ask)
    assert cls.uses_context and cls.signature() == "ask(question: str)"
    assert cls(context=ToolContext.local(tool="ask")).execute(question="q") == "q via ask"
    assert tool_of(user_tools.count_words).uses_context is False


def test_workspace_is_a_path_annotation():
    assert Workspace.__origin__ is Path


# -- by import path ----------------------------------------------------------------------------


def test_a_tool_is_found_by_its_import_path():
    cls = Registry.tool_class(EXAMPLE)
    assert cls.name == "word_count" and cls().execute(text="the quick brown fox") == "4 words"
    assert Registry.topic_of(EXAMPLE) == EXAMPLE
    spec = tool_spec(EXAMPLE)  # the model calls it by its own name; the run records the path
    assert (spec.name, spec.signature, spec.description, spec.topic) == (
        "word_count", "word_count(text: str)", "Count the words in a text.", EXAMPLE,
    )  # fmt: skip
    # A class tool by its path too; a registered name is looked up first.
    assert Registry.tool_class("tests.support.word_tool:WordCount").name == "word_count"
    assert Registry.tool_class("search_files").name == "search_files"


def test_the_recorded_path_wins_over_a_name_registered_to_another_tool():
    from tests.support.word_tool import WordCount  # registers another "word_count" (a class)

    example = Registry.tool_class(EXAMPLE)
    assert Registry.tool_class("word_count", EXAMPLE) is example  # what a run's ToolSpec asks for
    assert Registry.tool_class("word_count", "tests.support.word_tool:WordCount") is WordCount
    assert Registry.tool_class("word_count", "gone.module:Gone") in (example, WordCount)  # the name, then


def test_a_tool_class_pickles_by_reference_so_a_ray_worker_imports_it():
    cls = tool_of(user_tools.count_words)
    data = cloudpickle.dumps(cls)
    assert b"tests.support.user_tools" in data and len(data) < 300  # a reference, not the class body
    assert cloudpickle.loads(data) is cls


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("tests.support.user_tools:not_a_tool", "is a function, not a tool: decorate it with @tool"),
        ("tests.support.user_tools:NOT_CALLABLE", "is int, not a tool"),
        ("tests.support.no_such_module:f", "cannot import 'tests.support.no_such_module'"),
        ("tests.support.user_tools:missing", "module 'tests.support.user_tools' has no 'missing'"),
        ("word_cuont", "no tool registered as 'word_cuont' (known: "),
    ],
)
def test_an_unknown_tool_is_one_line(name, message):
    with pytest.raises(RegistryError) as raised:
        Registry.tool_class(name)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_tools_are_given_as_names_paths_or_the_functions_themselves():
    assert tool_ref("search_files") == "search_files"
    assert tool_ref(user_tools.count_words) == "tests.support.user_tools:count_words"

    @tool
    def local(text: str) -> str:
        """Defined where no worker can import it."""
        return text

    with pytest.raises(ValueError, match="not defined at a module's top level"):
        tool_ref(local)
    with pytest.raises(ValueError, match="a tool is a name, an import path or a @tool function"):
        tool_ref(3)


# -- submit and `chorus run`: refused before anything is written -------------------------------


@pytest.fixture
def client(tmp_path):
    from actors import Client
    from actors.testing.model import ScriptedProvider

    settings = Settings.from_env(data_dir=tmp_path / "data", store_url=f"sqlite:///{tmp_path / 'chorus.db'}")
    with Client(settings=settings, llm=ScriptedProvider(lambda r: "{}"), start_ray=False) as c:
        yield c


@pytest.mark.parametrize(
    ("tools", "error", "message"),
    [
        (["tests.support.no_such_module:f"], RegistryError, "cannot import 'tests.support.no_such_module'"),
        ([user_tools.not_a_tool], RegistryError, "is a function, not a tool"),
        ([EXAMPLE, "tests.support.word_tool:WordCount"], ValueError, "two tools are named 'word_count'"),
    ],
)
def test_submit_refuses_a_bad_tool_before_anything_is_written(client, tmp_path, tools, error, message):
    with pytest.raises(error, match=message):
        client.submit("count", root=tmp_path, tools=tools)
    assert list(client.store.read_all(0)) == []


def test_chorus_run_refuses_an_unknown_tool_in_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from actors.cli.main import main

    monkeypatch.setenv("CHORUS_STORE_URL", f"sqlite:///{tmp_path / 'chorus.db'}")
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    for flag in ("--tools", "--tool"):
        code = main(["run", "count", "--root", str(tmp_path), flag, "examples.tools.word_count:wordcount"])
        err = capsys.readouterr().err
        assert code == 2
        assert err == (
            "chorus: error: no tool registered as 'examples.tools.word_count:wordcount', and module "
            "'examples.tools.word_count' has no 'wordcount' (from 'examples.tools.word_count:wordcount')\n"
        )
