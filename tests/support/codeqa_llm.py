"""A scripted model for the code-question orchestrator, and the small repositories folder it
answers about. The model plays all three parts a real one plays in such a run: the
orchestrator's steps (by the "Step N of M" line), the HyDE answer (a request with no
schema) and the keywords (a request whose schema asks for them)."""

from __future__ import annotations

import json
from pathlib import Path

from actors.codeqa.orchestrator import EXAMPLE_FILES
from actors.runtime.llm.types import LlmRequest
from tests.support.fake_llm import step_of

KEYWORDS = ["discount", "code", "total", "save", "checkout", "price", "apply", "round"]
HYDE = "def apply_discount(total, code):\n    if code == 'SAVE10':\n        return total * 0.9\n    return total\n"
ANSWER = "apply_discount in shop/shop/billing.py lines 6-10 takes 10% off for SAVE10; checkout in cart.py calls it."


def make_repos(root: Path) -> Path:
    """Two repositories: the prompt example's shop, and a second one the answer does not need."""
    files = {**EXAMPLE_FILES, "notes/README.md": "# notes\nNothing about discounts here... except this line.\n"}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _step(thought: str, action: str, **args: object) -> str:
    return json.dumps({"thought": thought, "action": action, "args": args})


def orchestrator(request: LlmRequest) -> str:
    """list → semantic_file_search → read_code → answer."""
    schema = request.response_schema or {}
    if "keywords" in schema.get("properties", {}):
        return json.dumps({"keywords": KEYWORDS})
    if not schema:
        return HYDE
    n = step_of(request)
    if n == 1:
        return _step("See the repositories.", "list_available_repositories")
    if n == 2:
        return _step("Find where discounts happen.", "semantic_file_search", query="How is a discount code applied?")
    if n == 3:
        return _step("Read the function.", "read_code", path="shop/shop/billing.py", start_line=6, end_line=10)
    return _step("Lines 6-10 show it.", "answer", answer=ANSWER, source="shop/shop/billing.py:9", quote="return round(total * 0.9, 2)")


def bad_inputs(request: LlmRequest) -> str:
    """Calls the tools wrongly (outside path, unknown repository, past the end), then answers."""
    n = step_of(request)
    if n == 1:
        return _step("Peek outside.", "read_code", path="../secret.txt")
    if n == 2:
        return _step("Unknown repository.", "get_repo_documentation", repo="zzz")
    if n == 3:
        return _step("Past the end.", "read_code", path="shop/shop/cart.py", start_line=99)
    return _step("Give up.", "answer", answer="I could not find it.")


def guesses_first(request: LlmRequest) -> str:
    """Answers before looking (refused), then searches, then answers (accepted)."""
    n = step_of(request)
    if n == 1:
        return _step("I know it.", "answer", answer="It is in shop/main.py.")
    if n == 2:
        return _step("Search.", "search_keyword", keyword="discount")
    return _step(
        "Line 6 shows it.", "answer", answer="apply_discount in shop/shop/billing.py line 6.",
        source="shop/shop/billing.py:6", quote="def apply_discount(total, code):",
    )


def always_guesses(request: LlmRequest) -> str:
    return _step("I know it.", "answer", answer="It is in shop/main.py.")
