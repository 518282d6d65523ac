"""The grounded ReAct agent driven in-process (no Ray): an answer from a search snippet is sent
back to read the definition by the verify step, an invented quote is refused, the run replays
with zero live calls, and a run recorded before grounding replays as it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.agent.lookups import NOT_IN_DEFINITION
from actors.agent.patches import GROUNDED_PATCHES, lookup_patched
from actors.agent.react import AgentState, ReactAgent, StartAgent
from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.llm.types import LlmRequest
from actors.runtime.perform import LiveEffects, ReplayEffects, drive, local_invoker
from actors.runtime.shell import ActorShell
from actors.tools.definitions import FindDefinition
from actors.tools.files import ReadFile, SearchFiles
from actors.agent.events import AgentStarted, ToolSpec
from events.store import EventStore
from tests.support.fake_llm import step_of
from tests.support.patch_sets import grounded_without

CLIENT = '''"""The client."""


class BaseClient:
    retries = 3


class HttpClient(BaseClient):
    """Talks HTTP."""

    def __init__(self, url):
        self.url = url
        self.timeout = 45
'''
QUESTION = "What is the default timeout of HttpClient?"
TOOLS = (SearchFiles, FindDefinition, ReadFile)


def _step(thought: str, action: str, **args: object) -> str:
    return json.dumps({"thought": thought, "action": action, "args": args})


def snippet_answerer(request: LlmRequest) -> str:
    """Searches, answers from the search line (a class line: no value), and answers from the
    definition once the verify step has had it read."""
    last = str(request.messages[-1]["content"])
    n = step_of(request)
    if n == 1:
        return _step("Search the class.", "search_files", query="HttpClient")
    if "timeout = 45" in last:
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")
    return _step(
        "The search line shows the class.", "answer", answer="HttpClient uses a 30 second timeout.",
        source="client.py:8", quote="class HttpClient(BaseClient):",
    )


def run(
    tmp_path: Path, script, *, grounded: bool = True, lookups: bool = False, question: str = QUESTION,
    store: EventStore | None = None, stream: str = "agent:g", patches: list[str] | None = None,
):
    (tmp_path / "client.py").write_text(CLIENT)
    store = store or EventStore("memory://")
    shell = ActorShell(ReactAgent(), stream, store, run_id="g").load()
    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in TOOLS]
    shell.handle(
        StartAgent(
            key="start", goal=question, root=str(tmp_path), tools=specs, max_iterations=6, model="m",
            grounded=grounded, lookups=lookups, patches=lookup_patched(patches or [], lookups),
        )
    )
    provider = ScriptedProvider(script)
    tools = {c.name: c(root=str(tmp_path)) for c in TOOLS}
    state = drive(shell, LiveEffects(LlmGateway(provider), local_invoker(tools)))
    return state, store.read_stream(stream), store, provider


def assert_replays(store: EventStore, events: list) -> None:
    """The recorded run, re-executed from its log, writes the same events."""
    replay = ActorShell(ReactAgent(), "agent:replay", store, run_id="replay").load()
    replay.handle(ReactAgent().start_command(events[0]))
    drive(replay, ReplayEffects(events), on_events=None)
    assert [(e.type_name, e.payload()) for e in store.read_stream("agent:replay")] == [(e.type_name, e.payload()) for e in events]


def test_an_answer_from_a_snippet_is_sent_to_read_the_definition(tmp_path: Path) -> None:
    state, events, _, provider = run(tmp_path, snippet_answerer)
    assert state.status == "completed"
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert [e.reason for e in rejected] == ["answer_refused"]
    assert "asks for a value" in rejected[0].observation
    called = [e.tool for e in events if e.type_name == "ToolCalled"]
    assert called == ["search_files", "find_definition"]
    assert state.answer == "<answer>45\n\nEvidence: client.py:13: self.timeout = 45</answer>"
    # the definition was read by the verify step's rule, with no model call: search, refused answer, answer
    assert provider.calls == 3
    read = [e for e in events if e.type_name == "StepDecided" and e.action == "find_definition"]
    assert read[0].args == {"name": "HttpClient"} and "not confirmed" in read[0].thought


def test_an_invented_quote_is_refused_and_the_last_step_says_not_found(tmp_path: Path) -> None:
    def inventor(request: LlmRequest) -> str:
        if step_of(request) == 1:
            return _step("Search.", "search_files", query="HttpClient")
        return _step("I know it.", "answer", answer="The timeout is 30.", source="client.py:13", quote="self.timeout = 30")

    state, events, _, _ = run(tmp_path, inventor)
    refusals = [e.observation for e in events if e.type_name == "StepRejected"]
    assert refusals and all("not a line any observation showed" in r for r in refusals)
    assert state.status == "completed"
    assert state.answer.startswith("<answer>Not found in the code") and "Unchecked lead: The timeout is 30." in state.answer


def test_no_answer_before_looking(tmp_path: Path) -> None:
    def eager(request: LlmRequest) -> str:
        if step_of(request) == 1:
            return _step("I know it.", "answer", answer="Not found in the code.")
        return snippet_answerer(request)

    _, events, _, _ = run(tmp_path, eager)
    first = next(e for e in events if e.type_name == "StepRejected")
    assert "not looked at any code" in first.observation


def test_a_grounded_run_with_a_verify_step_replays_identically_with_no_live_call(tmp_path: Path) -> None:
    _, original, store, _ = run(tmp_path, snippet_answerer)
    replay = ActorShell(ReactAgent(), "agent:replay", store, run_id="replay").load()
    started = original[0]
    replay.handle(ReactAgent().start_command(started))
    (tmp_path / "client.py").unlink()  # nothing is read in a replay
    drive(replay, ReplayEffects(original), on_events=None)
    replayed = store.read_stream("agent:replay")
    assert [(e.type_name, e.payload()) for e in replayed] == [(e.type_name, e.payload()) for e in original]


def test_without_grounding_the_agent_answers_as_it_did_before(tmp_path: Path) -> None:
    state, events, _, provider = run(tmp_path, snippet_answerer, grounded=False)
    assert state.answer == "<answer>HttpClient uses a 30 second timeout.</answer>"
    assert provider.calls == 2
    system = next(e for e in events if e.type_name == "LlmRequested").messages[0]["content"]
    assert '"quote"' not in system  # the prompt of runs recorded before grounding


def test_the_answers_source_and_quote_are_kept_however_the_model_writes_them() -> None:
    from actors.agent.parsing import parse_step

    names = ["search_files", "answer"]
    want = {"answer": "45", "source": "client.py:13", "quote": "self.timeout = 45"}
    nested = '{"thought": "t", "action": "answer", "args": {"answer": "45", "source": "client.py:13", "quote": "self.timeout = 45"}}'
    beside = '{"thought": "t", "action": "answer", "args": {"answer": "45"}, "source": "client.py:13", "quote": "self.timeout = 45"}'
    keyed = '{"thought": "t", "answer": "45", "source": "client.py:13", "quote": "self.timeout = 45"}'
    for reply in (nested, beside, keyed):
        assert parse_step(None, reply, names).args == want
    assert parse_step(None, '{"thought": "t", "action": "answer", "args": {"answer": "45"}}', names).args == {"answer": "45"}


# -- the agent's own lookups (runs started with lookups=True, the default for new runs) ----------------


def test_the_definition_a_question_names_is_read_before_the_first_model_call(tmp_path: Path) -> None:
    prompts: list[list[dict]] = []

    def answers_from_the_note(request: LlmRequest) -> str:
        prompts.append(request.messages)
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")

    state, events, _, provider = run(tmp_path, answers_from_the_note, lookups=True)
    assert state.answer == "<answer>45\n\nEvidence: client.py:13: self.timeout = 45</answer>"
    assert provider.calls == 1  # the lookup took no model call
    types = [e.type_name for e in events]
    assert types[:4] == ["AgentStarted", "StepDecided", "ToolCalled", "ToolReturned"]
    lookup = events[1]
    assert (lookup.action, lookup.args, lookup.auto, lookup.iteration) == ("find_definition", {"name": "HttpClient"}, True, 0)
    # shown as the agent's note in the user turn, never as a step the model took
    assert [m["role"] for m in prompts[0]] == ["system", "user"]
    user = prompts[0][1]["content"]
    assert "Looked up for you, the definition of HttpClient:" in user and "self.timeout = 45" in user


def test_with_patch_private_names_a_private_name_is_looked_up_before_the_first_model_call(tmp_path: Path) -> None:
    def answers_from_the_note(request: LlmRequest) -> str:
        return _step("Line 2 shows it.", "answer", answer="7", source="limits.py:2", quote="_MAX_PENDING = 7")

    question = "How many requests does _MAX_PENDING allow?"
    (tmp_path / "limits.py").write_text('"""Limits."""\n_MAX_PENDING = 7\n')
    state, events, _, provider = run(tmp_path, answers_from_the_note, lookups=True, question=question, patches=list(GROUNDED_PATCHES))
    assert (events[1].action, events[1].args, events[1].auto) == ("find_definition", {"name": "_MAX_PENDING"}, True)
    assert provider.calls == 1 and state.answer.startswith("<answer>7")
    # a run recorded without the patch made no such lookup: its replay does not make one either
    _, old, _, _ = run(tmp_path, answers_from_the_note, lookups=True, question=question, patches=grounded_without("private_names"), stream="agent:old")
    assert not any(e.type_name == "StepDecided" and e.auto for e in old)


def test_a_name_with_no_definition_leaves_the_prompt_as_it_would_be_without_the_lookup(tmp_path: Path) -> None:
    seen: list[str] = []

    def searcher(request: LlmRequest) -> str:
        seen.append(str(request.messages[-1]["content"]))
        return snippet_answerer(request)

    question = "What is the default timeout of HttpsClientPool?"
    _, events, _, _ = run(tmp_path, searcher, lookups=True, question=question)
    assert events[1].auto and events[1].args == {"name": "HttpsClientPool"}
    assert "No definition named" in events[3].output
    assert "Looked up for you" not in seen[0] and seen[0].startswith(f"Goal: {question}")
    first = next(e for e in events if e.type_name == "StepRejected")  # a lookup that found nothing is not looking
    assert "not looked at any code" in first.observation or first.reason == "answer_refused"


def test_the_models_own_lookups_are_capped(tmp_path: Path) -> None:
    names = iter(["BaseClient", "HttpClient.__init__", "BaseClient.retries", "HttpClient.url", "HttpClient.timeout"])

    def walker(request: LlmRequest) -> str:
        if "answer now" in str(request.messages[-1]["content"]).lower() and "LAST step" in str(request.messages[-1]["content"]):
            return _step("Line 13.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")
        name = next(names)
        return _step(f"Read the definition of {name}.", "find_definition", name=name)

    _, events, _, _ = run(tmp_path, walker, lookups=True, question="What is the default timeout of the client?")
    own = [e for e in events if e.type_name == "StepDecided" and e.action == "find_definition" and not e.auto]
    refused = [e for e in events if e.type_name == "StepRejected" and e.reason == "lookup_limit"]
    assert len(own) == 3 and refused
    assert "looked up 3 definitions already" in refused[0].observation


def test_a_run_with_the_agents_own_lookups_replays_identically_with_no_live_call(tmp_path: Path) -> None:
    _, original, store, _ = run(tmp_path, snippet_answerer, lookups=True)
    assert any(getattr(e, "auto", False) for e in original)
    replay = ActorShell(ReactAgent(), "agent:replay", store, run_id="replay").load()
    replay.handle(ReactAgent().start_command(original[0]))
    (tmp_path / "client.py").unlink()  # nothing is read in a replay
    drive(replay, ReplayEffects(original), on_events=None)
    replayed = store.read_stream("agent:replay")
    assert [(e.type_name, e.payload()) for e in replayed] == [(e.type_name, e.payload()) for e in original]


def test_a_run_with_only_some_patches_replays_identically_with_no_live_call(tmp_path: Path) -> None:
    calls = []

    def unsure(request: LlmRequest) -> str:  # refused "not found" after the lookup, then a search
        calls.append(request)
        if len(calls) == 1:
            return _step("Not in it.", "answer", answer="Not found in the code")
        if len(calls) == 2:
            return _step("Search.", "search_files", query="timeout")
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")

    _, original, store, _ = run(tmp_path, unsure, lookups=True, patches=["answer_first", "quote_checks"])
    assert original[0].patches == ["answer_first", "quote_checks", "definition_checks"] and any(e.type_name == "StepRejected" for e in original)
    replay = ActorShell(ReactAgent(), "agent:replay", store, run_id="replay").load()
    replay.handle(ReactAgent().start_command(original[0]))
    (tmp_path / "client.py").unlink()  # nothing is read in a replay
    drive(replay, ReplayEffects(original), on_events=None)
    replayed = store.read_stream("agent:replay")
    assert [(e.type_name, e.payload()) for e in replayed] == [(e.type_name, e.payload()) for e in original]


def test_new_runs_of_an_agent_with_find_definition_make_their_own_lookups() -> None:
    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in TOOLS]
    assert ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=True).lookups is True
    assert ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=False).lookups is False
    assert ReactAgent.make_start(goal="q", root=".", tools=specs[:1], grounded=True).lookups is False
    assert ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=True).patches == [*GROUNDED_PATCHES, "definition_checks", "argless_tools"]
    assert ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=False).patches == ["files_prompt", "named_file_search", "argless_tools"]


def test_the_plain_agent_is_not_grounded_unless_asked_and_the_code_question_agent_is() -> None:
    """The default agent answers questions about files in general; grounding is `grounded=True`
    (`chorus run --grounded`), and the code-question orchestrator's own default."""
    from actors.codeqa.orchestrator import Orchestrator

    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in TOOLS]
    plain = ReactAgent.make_start(goal="q", root=".", tools=specs)
    assert (plain.grounded, plain.lookups, plain.patches) == (False, False, ["files_prompt", "named_file_search", "argless_tools"])
    asked = ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=None)
    assert asked.grounded is False
    code = Orchestrator.make_start(goal="q", root=".", tools=specs)
    assert (code.grounded, code.lookups, code.patches) == (True, True, [*GROUNDED_PATCHES, "definition_checks", "argless_tools"])


def test_a_value_quoted_from_outside_the_named_definition_is_refused_and_the_definition_read(tmp_path: Path) -> None:
    (tmp_path / "other.py").write_text('"""Another client."""\n\n\nclass FtpClient:\n    timeout = 30\n')
    seen: list[str] = []

    def wrong_class(request: LlmRequest) -> str:
        last = str(request.messages[-1]["content"])
        seen.append(last)
        if len(seen) == 1:
            return _step("Search.", "search_files", query="timeout")
        if "client.py, lines 8-" in last and "self.timeout = 45" in last:  # the definition, read for it
            return _step("Line 13.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")
        return _step("FtpClient sets it.", "answer", answer="30", source="other.py:5", quote="timeout = 30")

    state, events, _, _ = run(tmp_path, wrong_class, lookups=True)
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert [e.reason for e in rejected] == ["answer_refused"]
    assert "outside it" in rejected[0].observation and "client.py lines 8-13" in rejected[0].observation
    read = [e for e in events if e.type_name == "StepDecided" and e.action == "read_file"]
    assert read and read[0].auto and read[0].args == {"path": "client.py", "start_line": 8}
    assert state.answer == "<answer>45\n\nEvidence: client.py:13: self.timeout = 45</answer>"


def test_an_override_answer_quoting_the_named_method_itself_is_sent_to_the_override(tmp_path: Path) -> None:
    (tmp_path / "client.py").write_text(CLIENT)
    (tmp_path / "retry.py").write_text(
        "from client import BaseClient\n\n\nclass RetryingClient(BaseClient):\n    def send(self, data):\n        return data\n"
    )
    (tmp_path / "base.py").write_text("class Transport:\n    def send(self, data):\n        raise NotImplementedError\n")
    question = "Which class overrides Transport.send so that data is returned?"
    seen: list[str] = []

    def base_quoter(request: LlmRequest) -> str:
        last = str(request.messages[-1]["content"])
        seen.append(last)
        if "definition of RetryingClient.send" in last:
            return _step("Line 5.", "answer", answer="RetryingClient", source="retry.py:5", quote="def send(self, data):")
        return _step("It is RetryingClient.", "answer", answer="RetryingClient", source="base.py:2", quote="def send(self, data):")

    state, events, _, _ = run(tmp_path, base_quoter, lookups=True, question=question)
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert rejected and "not its override" in rejected[0].observation
    looked = [e.args for e in events if e.type_name == "StepDecided" and e.auto]
    assert looked == [{"name": "Transport.send"}, {"name": "RetryingClient.send"}]
    assert state.answer == "<answer>RetryingClient\n\nEvidence: retry.py:5: def send(self, data):</answer>"


# -- patch answer_first: the answer first, from the definition the opening lookup showed ---------------


def test_after_the_opening_lookup_the_first_step_may_only_be_the_answer(tmp_path: Path) -> None:
    requests: list[LlmRequest] = []

    def answerer(request: LlmRequest) -> str:
        requests.append(request)
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")

    state, _, _, provider = run(tmp_path, answerer, lookups=True, patches=["answer_first"])
    assert provider.calls == 1 and state.answer.startswith("<answer>45")
    assert requests[0].response_schema["properties"]["action"]["enum"] == ["answer"]
    assert "Answer now from the definition above" in str(requests[0].messages[-1]["content"])


def test_a_not_found_right_after_the_opening_lookup_sends_the_model_searching(tmp_path: Path) -> None:
    requests: list[LlmRequest] = []

    def unsure(request: LlmRequest) -> str:
        requests.append(request)
        if len(requests) == 1:
            return _step("Not in it.", "answer", answer="Not found in the code")
        if len(requests) == 2:
            return _step("Search.", "search_files", query="timeout")
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")

    state, events, _, _ = run(tmp_path, unsure, lookups=True, patches=["answer_first"])
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert [e.observation for e in rejected] == [NOT_IN_DEFINITION]
    assert "search_files" in requests[1].response_schema["properties"]["action"]["enum"]
    assert state.answer.startswith("<answer>45")


def test_no_answer_first_for_a_message_question_or_a_lookup_that_found_nothing(tmp_path: Path) -> None:
    for question in ("What does the error message of HttpClient say?", "What is the default timeout of HttpsClientPool?"):
        requests: list[LlmRequest] = []

        def searcher(request: LlmRequest) -> str:
            requests.append(request)
            return snippet_answerer(request)

        run(tmp_path, searcher, lookups=True, patches=["answer_first"], question=question)
        assert "search_files" in requests[0].response_schema["properties"]["action"]["enum"], question


def test_with_patch_all_names_shown_no_answer_first_when_the_definition_does_not_show_every_name_asked(tmp_path: Path) -> None:
    question = "Which method of HttpClient calls open_socket?"  # open_socket is not in HttpClient's lines
    for patches, first_actions in ((["answer_first"], ["answer"]), (["answer_first", "all_names_shown"], None)):
        requests: list[LlmRequest] = []

        def searcher(request: LlmRequest) -> str:
            requests.append(request)
            return _step("Not here.", "answer", answer="Not found in the code")

        run(tmp_path, searcher, lookups=True, patches=patches, question=question)
        enum = requests[0].response_schema["properties"]["action"]["enum"]
        if first_actions is None:
            assert "search_files" in enum, patches
        else:
            assert enum == first_actions, patches


def test_a_plain_run_reads_the_file_its_goal_names_before_the_first_model_call(tmp_path: Path) -> None:
    """Patch files_prompt (new runs that are not grounded): the goal names client.py, so the
    agent reads it for the model; a run recorded without the patch starts as it did."""
    prompts: list[str] = []

    def answerer(request: LlmRequest) -> str:
        prompts.append(str(request.messages[-1]["content"]) + str(request.messages[0]["content"]))
        return _step("Line 13 sets it.", "answer", answer="client.py sets the timeout to 45 (line 13).")

    question = "What does client.py say about the timeout?"
    state, events, store, provider = run(tmp_path, answerer, grounded=False, patches=["files_prompt"], question=question)
    read = events[1]
    assert (read.type_name, read.action, read.args, read.auto) == ("StepDecided", "read_file", {"path": "client.py"}, True)
    assert "Read for you, client.py from line 1:" in prompts[0] and "read_file that file first" in prompts[0]
    assert provider.calls == 1 and state.answer == "<answer>client.py sets the timeout to 45 (line 13).</answer>"
    assert_replays(store, events)
    _, old, _, _ = run(tmp_path, answerer, grounded=False, question=question, stream="agent:old")
    assert old[1].type_name != "StepDecided" and "read_file that file first" not in prompts[-1]


def test_a_plain_run_finds_the_goals_words_in_the_file_it_names_with_patch_named_file_search(tmp_path: Path) -> None:
    """Patch named_file_search (new plain runs): "what does client.py say about the timeout?"
    starts with client.py's lines on the timeout (a short file: shown whole), found for the
    model; the run replays; a goal giving only the file's name still reads it."""
    prompts: list[str] = []

    def answerer(request: LlmRequest) -> str:
        prompts.append(str(request.messages[-1]["content"]))
        return _step("Line 13 sets it.", "answer", answer="client.py sets the timeout to 45 (line 13).")

    question = "What does client.py say about the timeout?"
    patches = ["files_prompt", "named_file_search"]
    state, events, store, provider = run(tmp_path, answerer, grounded=False, patches=patches, question=question)
    found = events[1]
    assert (found.type_name, found.action, found.args, found.auto) == (
        "StepDecided", "search_files", {"query": "timeout", "path": "client.py"}, True)
    assert "client.py says it on line 13; the whole file:" in prompts[0] and "13:         self.timeout = 45" in prompts[0]
    assert provider.calls == 1 and state.answer == "<answer>client.py sets the timeout to 45 (line 13).</answer>"
    assert_replays(store, events)
    _, named_only, _, _ = run(tmp_path, answerer, grounded=False, patches=patches, question="Summarize client.py", stream="agent:s")
    assert (named_only[1].action, named_only[1].args) == ("search_files", {"query": "Summarize", "path": "client.py"})
    _, only_name, _, _ = run(tmp_path, answerer, grounded=False, patches=patches, question="client.py?", stream="agent:n")
    assert (only_name[1].action, only_name[1].args) == ("read_file", {"path": "client.py"})


def test_opening_read_takes_a_search_only_with_the_patch_and_the_search_tool() -> None:
    from actors.agent.lookups import opening_read

    goal = "What does docs/cli.md say about budgets?"
    both = ["search_files", "read_file"]
    assert opening_read(goal, both, ["named_file_search"]).args == {"query": "budgets", "path": "docs/cli.md"}
    assert opening_read(goal, both, []).args == {"path": "docs/cli.md"}  # recorded before the patch
    assert opening_read(goal, ["read_file"], ["named_file_search"]).args == {"path": "docs/cli.md"}
    assert opening_read("What does the README say?", both, ["named_file_search"]) is None  # names no file


def test_runs_without_patch_answer_first_ask_for_a_step_as_before(tmp_path: Path) -> None:
    requests: list[LlmRequest] = []

    def answerer(request: LlmRequest) -> str:
        requests.append(request)
        return _step("Line 13 shows it.", "answer", answer="45", source="client.py:13", quote="self.timeout = 45")

    run(tmp_path, answerer, lookups=True, patches=grounded_without("answer_first"))
    assert "search_files" in requests[0].response_schema["properties"]["action"]["enum"]
    assert "Answer now from the definition above" not in str(requests[0].messages[-1]["content"])


def test_the_overrides_a_lookup_shows_must_be_named_by_the_answer_that_quotes_them(tmp_path: Path) -> None:
    (tmp_path / "base.py").write_text("class Transport:\n    def send(self, data):\n        raise NotImplementedError\n")
    (tmp_path / "retry.py").write_text(
        "from base import Transport\n\n\nclass RetryingClient(Transport):\n    def send(self, data):\n        return data\n"
    )
    (tmp_path / "quiet.py").write_text(
        "from base import Transport\n\n\nclass QuietClient(Transport):\n    def send(self, data):\n        return None\n"
    )
    question = "Which class overrides Transport.send so that data is returned?"
    requests: list[LlmRequest] = []

    def chooser(request: LlmRequest) -> str:
        requests.append(request)
        if len(requests) == 1:  # the right line, the wrong class
            return _step("Line 5.", "answer", answer="QuietClient", source="retry.py:5", quote="def send(self, data):")
        return _step("Line 5.", "answer", answer="RetryingClient", source="retry.py:5", quote="def send(self, data):")

    state, events, _, _ = run(tmp_path, chooser, lookups=True, patches=["answer_first", "quote_checks"], question=question)
    first = str(requests[0].messages[-1]["content"])
    assert "(override RetryingClient.send):" in first and "return data" in first  # both overrides shown in one lookup
    assert "(override QuietClient.send):" in first
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert len(rejected) == 1 and "in RetryingClient's override" in rejected[0].observation
    assert state.answer == "<answer>RetryingClient\n\nEvidence: retry.py:5: def send(self, data):</answer>"


def test_no_answer_first_when_the_named_class_was_shown_only_in_part(tmp_path: Path) -> None:
    members = "".join(f"    def method_{i}(self):\n        return {i}\n\n" for i in range(60))
    (tmp_path / "big.py").write_text(f"class Big:\n{members}")
    requests: list[LlmRequest] = []

    def searcher(request: LlmRequest) -> str:
        requests.append(request)
        return snippet_answerer(request)

    _, events, _, _ = run(tmp_path, searcher, lookups=True, patches=["answer_first"], question="Which method of the Big class returns 59?")
    assert "more member lines" in events[3].output  # the outline was cut
    assert "search_files" in requests[0].response_schema["properties"]["action"]["enum"]


def test_a_value_quoted_from_a_docstring_is_refused_and_nothing_more_is_looked_up(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(
        'class Factory:\n    def construct(self, env):\n        """Reads the topic from PERSISTENCE_MODULE."""\n'
        '        return env.get("PERSISTENCE_MODULE") or "pkg.popo"\n'
    )
    question = "If no module is named, which module topic does Factory.construct() fall back to?"
    requests: list[LlmRequest] = []

    def docstring_first(request: LlmRequest) -> str:
        requests.append(request)
        if len(requests) == 1:
            return _step("Line 3.", "answer", answer="PERSISTENCE_MODULE", source="factory.py:3",
                         quote='"""Reads the topic from PERSISTENCE_MODULE."""')
        return _step("Line 4.", "answer", answer="pkg.popo", source="factory.py:4",
                     quote='return env.get("PERSISTENCE_MODULE") or "pkg.popo"')

    state, events, _, _ = run(tmp_path, docstring_first, lookups=True, patches=["quote_checks"], question=question)
    rejected = [e for e in events if e.type_name == "StepRejected"]
    assert len(rejected) == 1 and "docstring or a comment" in rejected[0].observation
    assert [e.args for e in events if e.type_name == "StepDecided"] == [{"name": "Factory.construct"}]  # no lookup after
    assert state.answer.startswith("<answer>pkg.popo")


def test_a_run_asks_for_patches_by_name_and_an_unknown_one_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    from actors import Client
    from actors.agent.patches import UnknownPatch
    from actors.runtime.settings import Settings

    settings = Settings.from_env(store_url="memory://", data_dir=tmp_path / "data")
    with Client(settings=settings) as chorus:
        with pytest.raises(UnknownPatch, match="unknown patch 'line_numbers': the agent's patches are answer_first, "):
            chorus.submit("What is the default timeout of HttpClient?", root=tmp_path, patches=["answer_first", "line_numbers"])
        with pytest.raises(ValueError, match="patches must be a list of patch names, not the string 'answer_first'"):
            chorus.submit("What is the default timeout of HttpClient?", root=tmp_path, patches="answer_first")
        assert list(chorus.store.read_all()) == []  # nothing half-written
    chosen = ReactAgent.make_start(goal="q", root=".", tools=[], grounded=True, patches=["quote_checks", "answer_first"])
    assert chosen.patches == ["answer_first", "quote_checks"]


def test_a_run_recorded_at_a_deleted_rule_revision_is_refused_with_one_clear_error(tmp_path: Path) -> None:
    """Revisions 6 to 8 were experiments: a log recorded at one reads (its AgentStarted upcast
    keeps a patch named for the revision), and replaying or resuming it says why it cannot."""
    from actors.agent.patches import UnknownPatch
    from events.registry import upcast

    payload = upcast("AgentStarted", 2, {"goal": "q", "root": ".", "tools": [], "max_iterations": 3, "model": "m",
                                         "grounded": True, "lookups": True, "rules": 7})  # fmt: skip
    assert payload["patches"][-1] == "rule_revision_7" and "rules" not in payload
    started = AgentStarted.model_validate({**payload, "stream_id": "agent:x", "version": 1})
    shell = ActorShell(ReactAgent(), "agent:x", EventStore("memory://"), run_id="x").load()
    with pytest.raises(UnknownPatch, match="recorded at grounded rule revision 7, an experiment no longer supported"):
        shell.handle(ReactAgent().start_command(started))


def test_a_recorded_rule_revision_loads_as_the_patches_it_meant() -> None:
    from actors.agent.patches import GROUNDED_PATCHES
    from events.registry import upcast

    def patches(rules: int | None) -> list[str]:
        payload = {"goal": "q", "root": ".", "tools": [], "max_iterations": 3, "model": "m"}
        return upcast("AgentStarted", 2, payload if rules is None else {**payload, "rules": rules})["patches"]

    assert patches(None) == patches(0) == []
    assert patches(1) == ["answer_first", "quote_checks"]
    assert patches(4) == ["answer_first", "quote_checks", "all_names_shown", "only_where", "head_phrase", "new_name"]
    assert patches(5) == list(GROUNDED_PATCHES)  # revision 5 is what new grounded runs start with
    assert AgentState.model_validate({"rules": 2}).patches == patches(2)  # a snapshot of the old state


def test_a_run_recorded_with_lookups_has_definition_checks() -> None:
    """The checks that came with `lookups` (the `strict` flag) are patch definition_checks: a run
    recorded before with lookups had them, so its AgentStarted (and ResearchRequested) gets it;
    every run with lookups has it."""
    from actors.agent.patches import GROUNDED_PATCHES
    from events.registry import upcast

    payload = {"goal": "q", "root": ".", "tools": [], "max_iterations": 3, "model": "m"}
    v3 = {**payload, "patches": [*GROUNDED_PATCHES, "argless_tools"]}
    for name in ("AgentStarted", "ResearchRequested"):
        body = {**v3, "objective": "q"} if name == "ResearchRequested" else v3
        assert upcast(name, 3, {**body, "lookups": True})["patches"] == [*GROUNDED_PATCHES, "definition_checks", "argless_tools"]
        assert upcast(name, 3, {**body, "lookups": False})["patches"] == v3["patches"]  # without lookups: as recorded
        assert upcast(name, 2, {**payload, "rules": 5, "lookups": True})["patches"] == [*GROUNDED_PATCHES, "definition_checks"]
        assert upcast(name, 2, {**payload, "rules": 0, "lookups": True})["patches"] == ["definition_checks"]
        assert upcast(name, 2, {**payload, "rules": 7, "lookups": True})["patches"][-2:] == ["definition_checks", "rule_revision_7"]
    # a snapshot of the state from before, and a new run asking for lookups without the patch: it has it
    assert "definition_checks" in AgentState.model_validate({"lookups": True, "patches": ["quote_checks"]}).patches
    assert AgentState.model_validate({"lookups": False, "patches": ["quote_checks"]}).patches == ["quote_checks"]
    specs = [ToolSpec(name=c.name, signature=c.signature(), description=c.description) for c in TOOLS]
    start = ReactAgent.make_start(goal="q", root=".", tools=specs, grounded=True, patches=["quote_checks"])
    assert (start.lookups, start.patches) == (True, ["quote_checks", "definition_checks"])
