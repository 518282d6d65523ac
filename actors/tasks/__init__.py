"""The task system (seed 001): S-expression workflows over atomic XML task templates.

    sexp/, dispatcher.py, task_system.py, handler.py, memory.py, result.py, journal.py,
    workflow.py            the pure core: the evaluator, the Dispatcher, `WorkflowBehaviour`
    templates/, templates.py   its prompts: atomic task templates, checked at registration
    tools.py               its direct tools (`system:run_script`, `system:read_files`)
    actor.py, runner.py    the Ray shell: `TaskActor`, and `serve`, which it runs
    client.py, fork.py     runs from Python, and forks (Temporal's reset)
    events.py              its event types (WorkflowStarted ... WorkflowForked)
    replay.py              replay: the workflow re-executed from its log
    kind.py                its RunKind, `TaskRun`; cli.py, `chorus task`; progress.py
"""

__all__ = ["actor", "cli", "client", "fork", "kind", "progress", "result", "runner", "workflow"]
