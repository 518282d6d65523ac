"""The research workload (seed 000): a repository indexed, a plan, the ReAct loop, a report.

    researcher.py   the pure core: `Researcher` (PENDING → INDEXING → RUNNING → COMPLETED)
    prompts.py      its plan and report prompts
    tools           `index_repository`, `repository_search` (the shared `actors.index`)
    Ray shell       the agent's (`actors.agent.actor.AgentActor`)
    kind.py         its RunKind, `ResearchRun`; cli.py, the `chorus research` verb
"""

__all__ = ["cli", "kind", "prompts", "researcher"]
