"""The ReAct agent (seed 000 §2.2), shared by the workloads that reason in a loop.

The plan every workload folder follows:
    events.py                         its event types (AgentStarted ... AgentForked), registered
                                      when its plugin (kind.py) is loaded
    react.py, parsing.py, policy.py   the pure core: `ReactAgent` (decide/evolve, next_effect)
    lookups.py, patches.py            the agent's own lookups; its named patches (`patched`)
    asks.py, evidence.py              what a question asks; grounding a quote in what was shown
    answer_terms.py                   the words and values of questions, answers and quotes
    mismatch.py, verify.py            does the quote answer the question (`CHECKS`); the
                                      verify step's whole verdict (`check_answer`)
    prompts.py                        its prompts and step schema
    actor.py                          the Ray shell: `AgentActor`, which serves any agent run
    replay.py                         replay: each agent stream re-driven against its log
    kind.py                           its RunKind: `AgentRunKind` (reused by research and
                                      code questions) and `ReactRun` (`chorus run`)
Its tools are the shared file tools (`actors.tools`).
"""

__all__ = ["actor", "kind", "parsing", "policy", "prompts", "react"]
