"""A tool of one's own as a plain function (examples/tools/word_count.py), named by its import
path: the ReAct agent on local Ray calls it (once wrongly: a failed call, not a crash), the run
completes, and it replays identically from its log with no model and no tool."""

from __future__ import annotations

from actors.runtime.replay import replay_run
from examples.tools.word_count import word_count
from tests.support.user_tools import counts_with_example_tool


def test_an_agent_runs_a_function_tool_found_by_its_import_path(client, tmp_path):
    with client(counts_with_example_tool) as c:
        run = c.submit("How many words are in 'the quick brown fox'?", root=tmp_path, tools=[word_count])
        result = run.wait(timeout=90)
        events = [r.event for r in c.events(run.run_id)]
        report = replay_run(c.store, run.run_id)
        after = len(c.events(run.run_id))
    assert result.ok and "4 words" in result.answer, result
    started = next(e for e in events if e.type_name == "AgentStarted")
    assert [(t.name, t.topic) for t in started.tools] == [("word_count", "examples.tools.word_count:word_count")]
    assert events[0].params["tools"] == ["examples.tools.word_count:word_count"]
    returned = [(e.ok, e.output) for e in events if e.type_name == "ToolReturned"]
    assert returned == [
        (False, "Error: word_count: argument 'text' is missing; it takes no argument 'words'; call it as word_count(text: str)"),
        (True, "4 words"),
    ]
    assert report.ok, report.divergence and report.divergence.describe()
    assert (report.llm_calls, report.tool_calls) == (3, 2)
    assert after == len(events)  # the replay wrote nothing and called nothing live
