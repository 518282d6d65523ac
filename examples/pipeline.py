"""Summarise, then critique: two agents and a tool, durable, replayable and forkable."""
from actors.sdk import Client, agent, tool


@tool
def word_count(text: str) -> str:
    """Count the words in a text."""
    return f"{len(text.split())} words"


@agent
def summarise(ctx, text: str) -> str:
    return ctx.llm(f"Summarise in one sentence:\n{text}")


@agent
def critique(ctx, text: str) -> str:
    summary = ctx.agent(summarise, text)
    length = ctx.tool(word_count, text=summary)
    return ctx.llm(f"Critique this summary ({length}):\n{summary}")


if __name__ == "__main__":
    with Client() as chorus:
        print(chorus.submit(open("README.md").read()[:2000], agent=critique).wait().answer)
