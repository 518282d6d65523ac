"""An agent that waits for a person: it drafts, suspends until `chorus signal RUN approval
'{"ok": true}'` (or `run.signal("approval", {...})`), then publishes or revises."""
from actors.sdk import Client, agent


@agent
def release_notes(ctx, goal: str) -> str:
    draft = ctx.llm(f"Draft release notes for: {goal}")
    verdict = ctx.wait_for("approval")  # the run is let go of until the signal comes
    if verdict.get("ok"):
        return draft
    return ctx.llm(f"Revise these notes ({verdict.get('note', '')}):\n{draft}")


if __name__ == "__main__":
    with Client() as chorus:
        run = chorus.submit("version 2.0", agent=release_notes)
        run.wait()
        print(run.signal("approval", {"ok": True}).wait().answer)
