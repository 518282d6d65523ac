"""A tool of one's own, as a plain function: `chorus run "..." --tools examples.tools.word_count:word_count`."""

from actors import tool


@tool
def word_count(text: str) -> str:
    """Count the words in a text."""
    return f"{len(text.split())} words"
