"""The orchestrator (seed 003) in-process: its prompt, how it reads steps, a scripted run
over the five tools, what the answer relied on, and replay of that run."""

from __future__ import annotations

import json
from pathlib import Path

from actors.agent.parsing import parse_step
from actors.agent.policy import is_repeat
from actors.agent.prompts import AgentStep, HistoryItem, StepProblem
from actors.agent.react import StartAgent
from actors.codeqa import orchestrator as orch
from actors.codeqa.answer import Source, relied_on
from actors.codeqa.tools import (
    GetRepoDocumentation,
    ListAvailableRepositories,
    ReadCode,
    SearchKeyword,
    SemanticFileSearch,
)
from actors.runtime.perform import LiveEffects, drive, local_invoker
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.registry import Registry
from actors.runtime.shell import ActorShell
from actors.runtime.tool_context import ToolContext
from actors.agent.events import ToolSpec
from events.store import EventStore
from actors.agent.replay import replay_agent_stream
from actors.tools.definitions import FindDefinition
from tests.support import codeqa_llm

CLASSES = (ListAvailableRepositories, GetRepoDocumentation, SearchKeyword, ReadCode, SemanticFileSearch)
SPECS = [(c.name, c.signature(), c.description) for c in CLASSES]


def test_the_example_shows_what_the_tools_really_print(tmp_path: Path) -> None:
    for rel, text in orch.EXAMPLE_FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    root = str(tmp_path)
    assert ListAvailableRepositories(root=root).execute() == orch.EXAMPLE_LIST_OBSERVATION
    assert SearchKeyword(root=root).execute(**orch.EXAMPLE_SEARCH) == orch.EXAMPLE_SEARCH_OBSERVATION
    assert ReadCode(root=root).execute(**orch.EXAMPLE_READ) == orch.EXAMPLE_READ_OBSERVATION
    assert FindDefinition(root=root).execute(**orch.EXAMPLE_FIND) == orch.EXAMPLE_FIND_OBSERVATION


def test_the_grounded_prompt_asks_for_a_quoted_line_and_shows_find_definition() -> None:
    specs = [*SPECS, (FindDefinition.name, FindDefinition.signature(), FindDefinition.description)]
    system = orch.system_prompt(specs, grounded=True)
    assert '"source": "<path:LINE>", "quote": "<that line, copied exactly>"' in system
    assert orch.EXAMPLE_FIND_OBSERVATION in system and '"quote": "return round(total * 0.9, 2)"' in system
    assert "Not found in the code" in system
    # a run recorded before grounding keeps the prompt it had
    assert '"quote"' not in orch.system_prompt(SPECS)


def test_the_prompt_lists_the_five_tools_the_format_rules_and_example() -> None:
    agent = Registry.agent_class("orchestrator")()
    messages = agent.prompt("How does auth work?", SPECS, [], iteration=1, max_iterations=10)
    system = messages[0]["content"]
    for signature in (
        "list_available_repositories()",
        "get_repo_documentation(repo: str)",
        'search_keyword(keyword: str, repo: str = "")',
        "read_code(path: str, start_line: int = 1, end_line: int = 0)",
        'semantic_file_search(query: str, repo: str = "")',
    ):
        assert f"- {signature}: " in system
    assert '{"thought": "<one short sentence>", "action": "search_keyword", "args": {"keyword": "..."}}' in system
    assert "Example:" in system and orch.EXAMPLE_SEARCH_OBSERVATION in system
    assert "name the files and line ranges you relied on" in system
    assert "search_files" not in system and "read_file" not in system
    assert messages[1]["content"].startswith("Goal: How does auth work?")
    without = orch.system_prompt([s for s in SPECS if s[0] != "read_code"])
    assert "Example:" not in without and "read_code" not in without


def test_steps_are_read_with_the_orchestrators_arguments() -> None:
    agent = orch.Orchestrator()
    names = list(orch.TOOLS)
    listed = agent.parse(None, '{"thought": "t", "action": "list_available_repositories", "args": {}}', names)
    assert listed == AgentStep(thought="t", action="list_available_repositories", args={})
    bare = agent.parse(None, '{"thought": "t", "action": "search_keyword", "args": "auth"}', names)
    assert bare.args == {"keyword": "auth"}
    doc = agent.parse(None, 'Action: get_repo_documentation\nAction Input: signify', names)
    assert doc.action == "get_repo_documentation" and doc.args == {"repo": "signify"}
    # the plain ReAct agent still insists on arguments
    assert isinstance(parse_step(None, '{"action": "search_files", "args": {}}', ["search_files"]), StepProblem)


def test_a_repeated_read_code_is_caught_like_a_repeated_read_file() -> None:
    shown = "shop/a.py, lines 1-20 of 90:\n" + "\n".join(f"{i}: x" for i in range(1, 21)) + "\n(showing lines 1-20 of 90)"
    history = [HistoryItem(action="read_code", args={"path": "shop/a.py", "start_line": 1, "end_line": 20}, observation=shown)]
    assert is_repeat(history, "read_code", {"path": "shop/a.py", "start_line": 5, "end_line": 10})
    assert not is_repeat(history, "read_code", {"path": "shop/a.py", "start_line": 15, "end_line": 30})


def run_orchestrator(tmp_path: Path, script) -> tuple[object, list, EventStore]:
    repos = codeqa_llm.make_repos(tmp_path / "repos")
    store = EventStore("memory://")
    shell = ActorShell(orch.Orchestrator(), "agent:q", store, run_id="q").load()
    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in CLASSES]
    shell.handle(StartAgent(key="start", goal="How is a discount code applied?", root=str(repos), tools=specs, model="m"))
    provider = ScriptedProvider(script)
    context = ToolContext.local(provider, tool="semantic_file_search")
    tools = {c.name: c(root=str(repos)) for c in CLASSES[:-1]}
    tools["semantic_file_search"] = SemanticFileSearch(root=str(repos), context=context, ranking="hyde")  # the script plays HyDE
    state = drive(shell, LiveEffects(LlmGateway(provider), local_invoker(tools)))
    return state, store.read_stream("agent:q"), store


def test_a_scripted_question_uses_the_tools_and_answers_in_tags(tmp_path: Path) -> None:
    state, events, _ = run_orchestrator(tmp_path, codeqa_llm.orchestrator)
    assert state.status == "completed"
    assert state.answer == f"<answer>{codeqa_llm.ANSWER}</answer>"
    calls = [(e.tool, e.ok) for e in events if e.type_name == "ToolReturned"]
    assert calls == [("list_available_repositories", True), ("semantic_file_search", True), ("read_code", True)]
    semantic = next(e for e in events if e.type_name == "ToolReturned" and e.tool == "semantic_file_search")
    assert semantic.output.splitlines()[1] == "3 files contain them (most occurrences first):"
    assert semantic.output.splitlines()[2].startswith("1. shop/shop/billing.py (")
    first = next(e for e in events if e.type_name == "LlmRequested")
    assert first.messages[0]["content"] == orch.system_prompt([(s.name, s.signature, s.description) for s in state.tools])


def test_bad_tool_calls_are_observations_and_the_run_goes_on(tmp_path: Path) -> None:
    state, events, _ = run_orchestrator(tmp_path, codeqa_llm.bad_inputs)
    assert state.status == "completed"
    failed = [e.output for e in events if e.type_name == "ToolReturned"]
    assert failed[0].startswith("Error: Refused: '../secret.txt' is outside the root folder")
    assert failed[1] == "Error: No repository 'zzz'. The repositories are: notes, shop."
    assert failed[2] == "Error: 'shop/shop/cart.py' has 6 lines; start_line=99 is past the end. Use start_line between 1 and 6."


def test_the_answer_relied_on_what_was_read_and_what_it_names(tmp_path: Path) -> None:
    _, events, _ = run_orchestrator(tmp_path, codeqa_llm.orchestrator)
    sources = relied_on(events, codeqa_llm.ANSWER)
    assert sources == [Source("shop/shop/billing.py", ((6, 10),)), Source("shop/shop/cart.py", ((4, 4),))]
    assert [s.line() for s in sources] == ["shop/shop/billing.py lines 6-10", "shop/shop/cart.py line 4"]
    assert relied_on(events, "nothing named") == [Source("shop/shop/billing.py", ((6, 10),))]


def test_sources_merge_overlapping_reads_and_ignore_failed_calls() -> None:
    from events.effects import ToolReturned

    def read(a: int, b: int, ok: bool = True) -> ToolReturned:
        return ToolReturned(tool="read_code", call_index=1, ok=ok, output=f"r/x.py, lines {a}-{b} of 99:\n{a}: x")

    events = [read(1, 10), read(8, 20), read(30, 31), read(50, 60, ok=False)]
    assert relied_on(events, "") == [Source("r/x.py", ((1, 20), (30, 31)))]
    assert Source("r/x.py", ((1, 20), (30, 31))).line() == "r/x.py lines 1-20, 30-31"
    listed = ToolReturned(tool="search_keyword", call_index=2, ok=True, output=(
        "2 files contain 'limit' (case-insensitive), most occurrences first:\n"
        "r/limits.py: 5 (line 4: MAX_LIMIT = 12)\nr/other.py: 1 (line 9: limit)\nNext: ..."
    ))  # fmt: skip
    assert relied_on([listed], "MAX_LIMIT in limits.py is 12") == [Source("r/limits.py", ((4, 4),))]


def test_a_recorded_orchestrator_run_replays_identically(tmp_path: Path) -> None:
    _, events, _ = run_orchestrator(tmp_path, codeqa_llm.orchestrator)
    replayed, divergence = replay_agent_stream(orch.Orchestrator(), "agent:q", events, "q")
    assert divergence is None and len(replayed) == len(events)


def test_a_changed_prompt_makes_the_replay_diverge(tmp_path: Path, monkeypatch) -> None:
    _, events, _ = run_orchestrator(tmp_path, codeqa_llm.orchestrator)
    monkeypatch.setattr(orch, "system_prompt", lambda tools, grounded=False: "another prompt")
    _, divergence = replay_agent_stream(orch.Orchestrator(), "agent:q", events, "q")
    assert divergence is not None and "replay diverged at LLM call 1" in divergence.reason
    assert json.loads(events[2].content)["action"] == "list_available_repositories"


def test_an_answer_before_any_code_was_seen_is_refused_once_it_can_wait(tmp_path: Path) -> None:
    state, events, _ = run_orchestrator(tmp_path, codeqa_llm.guesses_first)
    assert state.status == "completed" and "billing.py" in state.answer
    refused = [e for e in events if e.type_name == "StepRejected"]
    assert [(e.iteration, e.reason, e.observation) for e in refused] == [(1, "answer_refused", orch.NO_EVIDENCE)]


def test_a_model_that_only_guesses_is_let_answer_when_stuck(tmp_path: Path) -> None:
    state, events, _ = run_orchestrator(tmp_path, codeqa_llm.always_guesses)
    assert state.status == "completed" and state.answer == "<answer>It is in shop/main.py.</answer>"
    assert [e.reason for e in events if e.type_name == "StepRejected"] == ["answer_refused", "answer_refused"]


def test_the_middle_steps_ask_for_an_answer_from_code_seen() -> None:
    assert orch.step_note(3, 10).startswith("Step 3 of 10. If an observation above shows the code that answers")
    assert orch.step_note(1, 10).startswith("Step 1 of 10. Reply with the next step")
    assert "LAST step" in orch.step_note(10, 10) and "only one step is left" in orch.step_note(9, 10)
