"""The research workload (seed 000): a repository indexed, a plan, the ReAct loop, a report.

    lead.py         the lead: the agent function `research` on the durable layer
                    (PENDING → INDEXING → RUNNING → COMPLETED), the loop run in-line
    prompts.py      its plan and report prompts (pure)
    events.py       its events (ResearchRequested ... ReportWritten, ResearchFailed)
    history.py      its view: seed 000's `research_history` table (`chorus research --history`)
    tools           `index_repository`, `repository_search` (the shared `actors.index`)
    Ray shell       the function runs' (`actors.runtime.function_agent.FunctionActor`)
    kind.py         its RunKind, `ResearchRun`; cli.py, the `chorus research` verb
"""

__all__ = ["cli", "events", "history", "kind", "lead", "prompts"]
