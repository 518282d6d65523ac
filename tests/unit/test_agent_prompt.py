"""The ReAct agent's prompt, reply parsing and context policy (pure; no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.agent import prompts as prompt
from actors.tools.definitions import find_definition
from actors.agent.policy import (
    REPEAT_MARK,
    canonical_args,
    format_observation,
    is_repeat,
    repeat_observation,
    summarize_step,
    unwrap_answer,
    wrap_answer,
)
from actors.agent.parsing import parse_step
from actors.agent.prompts import (
    AgentStep,
    HistoryItem,
    StepProblem,
    build_messages,
    step_schema,
)
from actors.tools.files import ReadFile, SearchFiles, read, search

TOOLS = [(c.name, c.signature(), c.description) for c in (SearchFiles, ReadFile)]
NAMES = ["search_files", "read_file"]

SEARCH_OBS = """3 files match 'sqlite', 'recorder'; the best 2:
sqlite.py (sqlite, recorder: 201 matches)
  sqlite.py:253: class SQLiteRecorder(Recorder):
  sqlite.py:281: class SQLiteAggregateRecorder(SQLiteRecorder, AggregateRecorder):
postgres.py (recorder: 105 matches)
  postgres.py:305: class PostgresRecorder:
Next: read_file(path, start_line) a few lines above a hit, or answer if a line above already shows it."""


def read_obs(path: str, a: int, b: int, n: int) -> str:
    body = "\n".join(f"{i}: x = {i}" for i in range(a, b + 1))
    return f"{path}, lines {a}-{b} of {n}:\n{body}\n(showing lines {a}-{b} of {n}; to continue read start_line={b + 1})"


def item(action: str, args: dict, observation: str, thought: str = "") -> HistoryItem:
    return HistoryItem(thought=thought, action=action, args=args, observation=observation)


# -- schema -----------------------------------------------------------------------------------------


def test_step_schema_limits_action_to_tools_and_answer() -> None:
    schema = step_schema(NAMES)
    assert schema["properties"]["action"] == {"type": "string", "enum": ["search_files", "read_file", "answer"]}
    assert schema["required"] == ["thought", "action", "args"]
    assert schema["properties"]["args"] == {"type": "object"}
    assert "anyOf" not in json.dumps(schema)  # plain enough for llama.cpp's grammar
    assert step_schema([])["properties"]["action"]["enum"] == ["answer"]
    assert step_schema(["answer", "read_file", "read_file"])["properties"]["action"]["enum"] == ["read_file", "answer"]


def test_agent_step_round_trips_through_the_schema_fields() -> None:
    step = AgentStep(thought="t", action="answer", args={"answer": "a"})
    assert set(step.model_dump()) == set(step_schema(NAMES)["properties"])


# -- messages ---------------------------------------------------------------------------------------


def test_first_prompt_has_tools_format_rules_and_example() -> None:
    messages = build_messages("Which file defines X?", TOOLS, [], 1, 8)
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert "search_files(query: str)" in system
    assert "read_file(path: str, start_line: int = 1, end_line: int = 0)" in system
    assert '"action": "answer", "args": {"answer": ' in system
    assert "Example:" in system and prompt.EXAMPLE_SEARCH_OBSERVATION in system
    assert "name the file" in system
    assert messages[1]["content"].startswith("Goal: Which file defines X?")
    assert messages[1]["content"].endswith("Step 1 of 8. Reply with the next step as one JSON object.")


def test_example_is_left_out_when_its_tools_are_not_offered() -> None:
    system = build_messages("g", [TOOLS[0]], [], 1, 3)[0]["content"]
    assert "Example:" not in system and "read_file" not in system


def test_example_observations_are_what_the_tools_really_print(tmp_path: Path) -> None:
    for name, text in prompt.EXAMPLE_FILES.items():
        (tmp_path / name).write_text(text)
    assert search(tmp_path, prompt.EXAMPLE_SEARCH["query"]) == prompt.EXAMPLE_SEARCH_OBSERVATION
    assert read(tmp_path, **prompt.EXAMPLE_READ) == prompt.EXAMPLE_READ_OBSERVATION
    assert find_definition(tmp_path, **prompt.EXAMPLE_FIND) == prompt.EXAMPLE_FIND_OBSERVATION


def test_the_grounded_prompt_shows_the_answer_quoting_its_line() -> None:
    grounded = build_messages("g", [*TOOLS, ("find_definition", "find_definition(name: str)", "d")], [], 1, 8, grounded=True)
    system = grounded[0]["content"]
    assert '"source": "<path:LINE>", "quote": "<that line, copied exactly>"' in system
    assert prompt.EXAMPLE_FIND_OBSERVATION in system and '"quote": "return {**DEFAULTS, **data}"' in system
    assert 'answer "Not found in the code"' in system
    # without find_definition, the example reads the file and quotes from the read
    plain = build_messages("g", TOOLS, [], 1, 8, grounded=True)[0]["content"]
    assert prompt.EXAMPLE_READ_OBSERVATION in plain and "find_definition" not in plain
    assert '"quote"' not in build_messages("g", TOOLS, [], 1, 8)[0]["content"]


def test_the_plain_agents_prompt_is_for_files_in_general_from_patch_files_prompt() -> None:
    """New runs that are not grounded start with patch files_prompt: a file the goal names is
    read, a tool doing what the goal asks is called; runs recorded before replay with the old prompt."""
    files = build_messages("g", TOOLS, [], 1, 8, files=True)[0]["content"]
    assert "If the goal names a file (such as README.md or config.py), read_file that file first" in files
    assert "do not look" not in files  # only the file tools: no rule for a tool of one's own
    own = build_messages("g", [*TOOLS, ("word_count", "word_count(text)", "d")], [], 1, 8, files=True)[0]["content"]
    assert "Rules:\n1. word_count: when it can do what the goal asks" in own
    assert prompt.EXAMPLE_READ_OBSERVATION in files and '"quote"' not in files
    old = build_messages("g", TOOLS, [], 1, 8)[0]["content"]
    assert "If the goal names a file" not in old and old == prompt.system_prompt(TOOLS)
    # a grounded run's prompt is the grounded one, patch or not
    assert build_messages("g", TOOLS, [], 1, 8, grounded=True, files=True) == build_messages("g", TOOLS, [], 1, 8, grounded=True)


def _history(n: int) -> list[HistoryItem]:
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(item("search_files", {"query": f"word{i}"}, SEARCH_OBS.replace("sqlite", f"sqlite{i}"), f"think {i}"))
        else:
            out.append(item("read_file", {"path": f"f{i}.py"}, read_obs(f"f{i}.py", 1, 80, 300 + i), f"think {i}"))
    return out


def test_context_keeps_the_last_k_verbatim_and_condenses_the_rest() -> None:
    history = _history(5)
    messages = build_messages("goal", TOOLS, history, 6, 10, keep_last=2)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    text = "\n".join(m["content"] for m in messages[1:])
    for step in history[3:]:
        assert step.observation in text  # verbatim
    for step in history[:3]:
        assert step.observation not in text  # condensed
    opening = messages[1]["content"]
    assert "Done so far (older steps, condensed):" in opening
    assert "1. search_files(query='word0') → 3 files, best sqlite0.py, postgres.py" in opening
    assert "2. read_file(path='f1.py') → read lines 1-80 of 301" in opening
    assert '(your thought: "think 2")' in opening
    assert json.loads(messages[2]["content"]) == {"thought": "think 3", "action": "read_file", "args": {"path": "f3.py"}}
    assert messages[3]["content"].startswith("Observation:\n" + history[3].observation)


def test_context_size_is_bounded_as_history_grows() -> None:
    sizes = [sum(len(m["content"]) for m in build_messages("goal", TOOLS, _history(n), n + 1, 50)) for n in (4, 20, 40)]
    per_old_step = (sizes[2] - sizes[1]) / 20
    assert per_old_step < 400  # one line per old step, not the observation


@pytest.mark.parametrize("keep", [0, 1, 3])
def test_keep_last_controls_how_many_are_verbatim(keep: int) -> None:
    history = _history(4)
    text = "\n".join(m["content"] for m in build_messages("goal", TOOLS, history, 5, 9, keep_last=keep))
    assert sum(step.observation in text for step in history) == keep


def test_roles_alternate_even_after_an_unusable_reply() -> None:
    history = [*_history(1), item("", {}, "Your reply was not a JSON object. ...")]
    messages = build_messages("goal", TOOLS, history, 3, 8)
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert "Your reply was not a JSON object" in messages[-1]["content"]


def test_last_iterations_say_answer_now() -> None:
    last = build_messages("goal", TOOLS, _history(3), 8, 8)[-1]["content"]
    assert last.endswith(
        'Step 8 of 8: this is your LAST step. You must answer now: reply with action "answer" and give your '
        "best answer from what you have found, naming the file and the class, function or variable."
    )
    assert "only one step is left" in build_messages("goal", TOOLS, _history(3), 7, 8)[-1]["content"]
    assert "LAST" not in build_messages("goal", TOOLS, _history(3), 6, 8)[-1]["content"]


def test_notes_go_into_the_goal_message() -> None:
    messages = build_messages("goal", TOOLS, [], 1, 4, notes="The root holds: a.py, b/")
    assert "The root holds: a.py, b/" in messages[1]["content"]


# -- parse_step ---------------------------------------------------------------------------------------

SEARCH_X = ("search_files", {"query": "x"})

GOOD = [
    (None, '{"thought": "t", "action": "search_files", "args": {"query": "x"}}', SEARCH_X),
    ({"thought": "t", "action": "search_files", "args": {"query": "x"}}, "ignored", SEARCH_X),
    ({"thought": "t", "action": "search", "args": {"query": "x"}}, "", SEARCH_X),
    (None, '```json\n{"thought": "t", "action": "read", "args": {"path": "a.py"}}\n```', ("read_file", {"path": "a.py"})),
    (None, 'Sure! {"thought": "t", "action": "search_files", "query": "x"} Hope it helps.', SEARCH_X),
    (None, '{"thought": "t", "action": "answer", "args": {"answer": "in a.py"}}', ("answer", {"answer": "in a.py"})),
    (None, '{"thought": "t", "answer": "in a.py"}', ("answer", {"answer": "in a.py"})),
    (None, '{"final_answer": "in a.py"}', ("answer", {"answer": "in a.py"})),
    (None, '{"thought": "t", "action": "final_answer", "args": "in a.py"}', ("answer", {"answer": "in a.py"})),
    (None, '{"thought": "t", "action": "Final Answer", "answer": "in a.py"}', ("answer", {"answer": "in a.py"})),
    (None, '{"thought": "t", "action": "answer", "args": {"text": "in a.py"}}', ("answer", {"answer": "in a.py"})),
    (None, '{"action": "answer", "args": {"answer": "<answer>in a.py</answer>"}}', ("answer", {"answer": "in a.py"})),
    (None, '{"action": "answer", "args": {"file": "a.py", "name": "f"}}', ("answer", {"answer": "file: a.py; name: f"})),
    (None, '{"thought": "t", "action": "search_files(query=\'x\')"}', SEARCH_X),
    (None, '{"thought": "t", "action": "read_file(\'a.py\', 250)"}', ("read_file", {"path": "a.py", "start_line": 250})),
    (None, '{"name": "search_files", "arguments": {"query": "x"}}', SEARCH_X),
    (None, '{"action": {"name": "read_file", "arguments": {"path": "a.py"}}}', ("read_file", {"path": "a.py"})),
    (None, '{"read_file": {"path": "a.py", "start_line": 3}}', ("read_file", {"path": "a.py", "start_line": 3})),
    (None, '{"thought": "t", "query": "x"}', SEARCH_X),
    (None, "{'thought': 't', 'action': 'search_files', 'args': {'query': 'x'}}", SEARCH_X),
    (None, '{"action": "search_files", "args": "{\\"query\\": \\"x\\"}"}', SEARCH_X),
    (None, '{"action": "search_files", "args": "x"}', SEARCH_X),
    (None, '{"action": "search_files", "args": ["x"]}', SEARCH_X),
    (None, '{"action": "read_file", "args": ["a.py", 10, 20]}', ("read_file", {"path": "a.py", "start_line": 10, "end_line": 20})),
    (None, '{"action": "read_file", "args": {"file": "a.py", "line": 9}}', ("read_file", {"path": "a.py", "start_line": 9})),
    (None, '{"action": "read_file", "args": {"Path": "a.py"}}', ("read_file", {"path": "a.py"})),
    (None, '{"Thought": "t", "Action": "Search Files", "Args": {"query": "x"}}', SEARCH_X),
    (None, '{"action": "searchFiles", "args": {"query": "x",}}', SEARCH_X),
    (None, '{"tool": "grep", "tool_input": {"query": "x"}}', SEARCH_X),
    (None, '{"action": "read_code", "action_input": {"file_path": "a.py"}}', ("read_file", {"path": "a.py"})),
    (None, '{"action": "open_file", "args": {"path": "a.py"}}', ("read_file", {"path": "a.py"})),
    (None, '{"action": "read_file", "args": {"path": "a.py"}, "start_line": 40, "observation": "made up"}', ("read_file", {"path": "a.py", "start_line": 40})),
    (None, '{"thought": "t", "action": "search_files", "args": {"query": "x"', SEARCH_X),  # cut off
    (None, '[{"thought": "t", "action": "search_files", "args": {"query": "x"}}]', SEARCH_X),
    (None, 'Thought: look\nAction: read_file\nAction Input: a.py', ("read_file", {"path": "a.py"})),
    (None, 'Thought: look\nAction: search_files\nAction Input: {"query": "x"}', SEARCH_X),
    (None, "Action: search[x]", SEARCH_X),
    (None, "So the answer is <answer>in a.py</answer>", ("answer", {"answer": "in a.py"})),
    (None, "Final Answer: in a.py", ("answer", {"answer": "in a.py"})),
]


@pytest.mark.parametrize("parsed, content, expected", GOOD)
def test_parse_step_tolerates_sloppy_replies(parsed, content, expected) -> None:
    step = parse_step(parsed, content, NAMES)
    assert isinstance(step, AgentStep), step
    assert (step.action, step.args) == expected


def test_parse_step_keeps_the_thought() -> None:
    step = parse_step(None, '{"thought": "look for it", "action": "search_files", "args": {"query": "x"}}', NAMES)
    assert isinstance(step, AgentStep) and step.thought == "look for it"
    step = parse_step(None, 'Thought: look for it\nAction: search_files\nAction Input: {"query": "x"}', NAMES)
    assert isinstance(step, AgentStep) and step.thought == "look for it" and step.args == {"query": "x"}


BAD = [
    ("I do not know.", "no_json", "Your reply was not a JSON object."),
    ('{"thought": "hmm"}', "no_action", 'Your JSON had no "action".'),
    ('{"thought": "t", "action": "delete_file", "args": {"path": "a"}}', "unknown_action", "'delete_file' is not an action."),
    ('{"thought": "t", "action": "search_files", "args": {}}', "missing_args", 'search_files needs its arguments in args, e.g. {"query": "..."}.'),
    ('{"thought": "t", "action": "answer", "args": {}}', "empty_answer", "Your answer was empty"),
    ('{"action": "answer", "args": {"answer": "  "}}', "empty_answer", "Your answer was empty"),
]


@pytest.mark.parametrize("content, reason, message", BAD)
def test_parse_step_explains_what_was_wrong(content: str, reason: str, message: str) -> None:
    problem = parse_step(None, content, NAMES)
    assert isinstance(problem, StepProblem)
    assert problem.reason == reason
    assert problem.observation.startswith(message)
    assert "action must be one of: search_files, read_file, answer." in problem.observation
    assert '{"thought": "...", "action": "search_files", "args": {"query": "..."}}' in problem.observation
    assert problem.raw == content


def test_parse_step_only_offers_the_tools_it_was_given() -> None:
    problem = parse_step(None, '{"action": "search_files", "args": {"query": "x"}}', ["read_file"])
    assert isinstance(problem, StepProblem) and problem.reason == "unknown_action"
    assert "action must be one of: read_file, answer." in problem.observation


@given(st.text(max_size=200))
def test_parse_step_never_raises(content: str) -> None:
    assert isinstance(parse_step(None, content, NAMES), (AgentStep, StepProblem))


@given(
    thought=st.text(max_size=40),
    query=st.text(min_size=1, max_size=40).filter(str.strip),
    wrapper=st.sampled_from(["{}", "```json\n{}\n```", "Here: {} done", "{}\n{{\"thought\": \"second\"}}"]),
)
def test_parse_step_reads_a_proper_step_in_any_wrapping(thought: str, query: str, wrapper: str) -> None:
    body = json.dumps({"thought": thought, "action": "search_files", "args": {"query": query}})
    step = parse_step(None, wrapper.replace("{}", body, 1), NAMES)
    assert step == AgentStep(thought=thought, action="search_files", args={"query": query})


# -- repeats --------------------------------------------------------------------------------------------


def test_is_repeat_sees_equivalent_arguments() -> None:
    history = [item("search_files", {"query": "SQLite recorder"}, SEARCH_OBS), item("read_file", {"path": "a.py"}, "Error: no such file")]
    assert is_repeat(history, "search_files", {"query": "recorder  sqlite"})
    assert is_repeat(history, "search_files", {"keyword": "sqlite, recorder"})
    assert not is_repeat(history, "search_files", {"query": "sqlite"})
    assert is_repeat(history, "read_file", {"path": "./a.py", "start_line": "1"})
    assert is_repeat(history, "read_file", {"file": "a.py", "start_line": 1, "end_line": 0})
    assert not is_repeat(history, "read_file", {"path": "b.py"})
    assert not is_repeat(history, "answer", {"answer": "x"})
    assert not is_repeat([], "search_files", {"query": "x"})


def test_is_repeat_sees_a_read_of_lines_already_shown() -> None:
    history = [
        item("read_file", {"path": "sqlite.py"}, read_obs("sqlite.py", 1, 80, 816)),
        item("read_file", {"path": "sqlite.py", "start_line": 81}, read_obs("sqlite.py", 81, 160, 816)),
    ]
    assert is_repeat(history, "read_file", {"path": "sqlite.py", "start_line": 1, "end_line": 120})
    assert is_repeat(history, "read_file", {"path": "sqlite.py", "start_line": 40})  # 40-89
    assert not is_repeat(history, "read_file", {"path": "sqlite.py", "start_line": 140})  # 140-189
    assert not is_repeat(history, "read_file", {"path": "postgres.py", "start_line": 1})


def test_a_cut_observation_counts_only_the_lines_shown() -> None:
    long = format_observation("read_file", read_obs("a.py", 1, 120, 500), limit_chars=400)
    history = [item("read_file", {"path": "a.py", "end_line": 120}, long)]
    assert not is_repeat(history, "read_file", {"path": "a.py", "start_line": 60, "end_line": 70})
    assert is_repeat(history, "read_file", {"path": "a.py", "start_line": 2, "end_line": 5})


def test_canonical_args_fill_read_defaults_and_path_line_forms() -> None:
    assert canonical_args("read_file", {"path": "a.py:120: x = 1"}) == {"path": "a.py", "start_line": 115, "end_line": 0}
    assert canonical_args("search_files", {"q": "B a a"}) == {"query": ("a", "b")}


def test_repeat_observation_says_what_happened_and_what_to_do() -> None:
    history = [item("search_files", {"query": "sqlite recorder"}, SEARCH_OBS)]
    text = repeat_observation(history, "search_files", {"query": "recorder sqlite"})
    assert text.startswith(f"{REPEAT_MARK}: search_files(query='recorder sqlite') was step 1")
    assert "sqlite.py:253 class SQLiteRecorder(Recorder):" in text
    assert "read_file one of those files" in text and "answer now" in text
    history.append(item("search_files", {"query": "recorder sqlite"}, text))
    again = repeat_observation(history, "search_files", {"query": "sqlite  recorder"})
    assert again.startswith(f"{REPEAT_MARK} again") and 'Answer NOW with action "answer"' in again


def test_repeat_observation_for_a_read_points_further_on() -> None:
    history = [item("read_file", {"path": "a.py"}, read_obs("a.py", 1, 80, 300))]
    text = repeat_observation(history, "read_file", {"path": "a.py", "start_line": 1, "end_line": 50})
    assert "read lines 1-80 of 300" in text and "start_line=81" in text


def test_summaries_are_one_line_and_keep_what_was_found() -> None:
    search_line = summarize_step(1, item("search_files", {"query": "q"}, SEARCH_OBS, "find it"))
    assert search_line.startswith("1. search_files(query='q') → 3 files, best sqlite.py, postgres.py; lines: sqlite.py:253 class SQLiteRecorder")
    code = "a.py, lines 1-3 of 3:\n1: class Store:\n2:     def __init__(self): pass\n3: LIMIT = 3\n(end of file: 3 lines)"
    read_line = summarize_step(2, item("read_file", {"path": "a.py"}, code))
    assert read_line == "2. read_file(path='a.py') → read lines 1-3 of 3; defines Store (line 1), LIMIT (line 3)"
    none = summarize_step(3, item("search_files", {"query": "zz"}, "No file under the root contains 'zz' (query 'zz').\nTry ..."))
    assert none == "3. search_files(query='zz') → no file matched"
    err = summarize_step(4, item("read_file", {"path": "b.py"}, "Error: ToolInputError: No file 'b.py' under the root."))
    assert err == "4. read_file(path='b.py') → error: No file 'b.py' under the root."
    for line in (search_line, read_line, none, err):
        assert "\n" not in line


# -- answers and observation size ---------------------------------------------------------------------


@given(st.text().filter(lambda t: "<answer>" not in t.lower() and "</answer>" not in t.lower()))
def test_wrap_and_unwrap_answer(text: str) -> None:
    wrapped = wrap_answer(text)
    assert wrapped == f"<answer>{text.strip()}</answer>"
    assert unwrap_answer(wrapped) == text.strip()
    assert wrap_answer(wrapped) == wrapped


def test_unwrap_tolerates_prose_and_a_missing_closing_tag() -> None:
    assert unwrap_answer("Sure. <answer> in a.py </answer> bye") == "in a.py"
    assert unwrap_answer("<ANSWER>in a.py") == "in a.py"
    assert unwrap_answer("no tags") == "no tags"


def test_format_observation_cuts_long_reads_with_where_to_continue() -> None:
    text = format_observation("read_file", read_obs("a.py", 1, 120, 500), limit_chars=500)
    assert len(text) <= 500
    kept = text.splitlines()
    last = int(kept[-2].split(":")[0])
    assert kept[-1].startswith("[output cut here: ") and f"read start_line={last + 1}" in kept[-1]


def test_format_observation_leaves_short_output_and_names_empty_output() -> None:
    assert format_observation("search_files", SEARCH_OBS) == SEARCH_OBS
    assert format_observation("read_file", "  \n") == "(read_file returned nothing)"
    assert "Search more specific words" in format_observation("search_files", SEARCH_OBS * 20, limit_chars=600)


@given(st.text(max_size=3000), st.integers(200, 2000))
def test_format_observation_respects_its_limit(output: str, limit: int) -> None:
    text = format_observation("some_tool", output, limit_chars=limit)
    assert len(text) <= limit or text == output.rstrip() or text.startswith("(")
