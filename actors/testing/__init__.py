"""The testing kit for your own agents, in one place: a scripted model, an in-process runner
(no Ray), a replay assertion, and the simulation's scripted minds.

    from actors.testing import ScriptedProvider, assert_replays, run_agent

    def test_my_agent():
        run = run_agent(my_agent, "a goal", model=["first reply", "second reply"])
        assert run.status == "completed" and "second" in run.answer
        assert_replays(run.store, run.run_id)       # identical, 0 live calls

The runner records exactly what a run on Ray records (the same `run:ID` and `function:ID`
streams, on a `memory://` store unless you give one), so `chorus log`-style readers, replay
and fork work on it. A function that waits for a signal comes back with status "waiting";
`run.signal(name, payload)` delivers one and runs it on; one suspended on a durable timer
comes back "waiting" with `wake_at`: give `run_agent` a `clock`, move it on, `run.resume()`.

- `actors.testing.model`: `ScriptedProvider`, canned replies (a list, or a function of the
  request), registered as the "scripted" LLM (was `actors.runtime.llm.testing`).
- `actors.testing.runner`: `run_agent`, `LocalRun`, `assert_replays`.
- `actors.testing.simulation`: scripted synth minds (`scripted_mind`, `scripted_synths`,
  `marco_polo`, ...; was `actors.simulation.testing`).
"""

from __future__ import annotations

from actors.testing.model import ScriptedProvider
from actors.testing.runner import LocalRun, assert_replays, run_agent

__all__ = ["LocalRun", "ScriptedProvider", "assert_replays", "run_agent"]
