"""Seed 003's code-question assistant: the Orchestrator (the ReAct agent with its own prompt)
and five tools over a folder of repositories, including HyDE semantic file search.

    orchestrator.py                 the pure core and its prompt: `Orchestrator`
    tools.py                        its five tools (the Tool classes)
    fusion.py, formatting.py        semantic search's rankings fused; what the tools print
    hyde.py, occurrences.py, repos.py, retrieval.py, config.py   what the tools build on
    answer.py                       which lines an answer relied on
    Ray shell                       the agent's (`actors.agent.actor.AgentActor`)
    kind.py                         its RunKind, `CodeQuestionRun`; cli.py, `chorus ask`
"""

__all__ = ["answer", "cli", "config", "formatting", "fusion", "hyde", "kind", "occurrences", "orchestrator",
           "repos", "retrieval", "tools"]
