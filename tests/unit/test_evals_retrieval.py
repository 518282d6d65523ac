"""The retrieval measurement (`python -m evals retrieval`): its question files are checked
before anything is indexed, and its scores carry what a ranker says of itself (how often the
HyDE fallback ran)."""

from __future__ import annotations

import pytest

from evals.retrieval import LLM_METHODS, METHODS, EvalError, Question, load_questions, score


@pytest.mark.parametrize("gold", ["5", '"a.py"', "[]", "[5]", '[""]', "{}"])
def test_gold_must_be_a_list_of_paths(tmp_path, gold):
    path = tmp_path / "q.json"
    path.write_text('{"questions": [{"q": "where?", "gold": GOLD}]}'.replace("GOLD", gold))
    with pytest.raises(EvalError, match="question 1 .*'gold' must be a non-empty list of file paths"):
        load_questions(path)


def test_the_evaluation_offers_the_fallback_and_reports_how_often_hyde_ran() -> None:
    assert "hybrid-hyde" in METHODS and "hybrid-hyde" in LLM_METHODS  # it gets a model context

    class Ranker:
        def __call__(self, question: str) -> list[str]:
            return ["a.py", "b.py"]

        def note(self) -> str:
            return "HyDE ran for 1 of 2 questions"

    result = score("hybrid-hyde", Ranker(), [Question("q1", ("a.py",)), Question("q2", ("b.py",))])
    assert result.mrr == pytest.approx(0.75) and result.note == "HyDE ran for 1 of 2 questions"
    assert score("hybrid", lambda q: ["a.py"], [Question("q1", ("a.py",))]).note == ""
