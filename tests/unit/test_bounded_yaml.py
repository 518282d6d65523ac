"""Every YAML document Chorus reads from outside is bounded (issue 34): no aliases (the
billion-laughs bomb), no nesting past the limit, no text past the size limit; for the
simulation's content packs and the relay's roadmaps alike."""

from __future__ import annotations

import pytest
import yaml

from actors.relay.roadmap import parse_roadmap
from actors.runtime.bounded_yaml import MAX_YAML_CHARS, BoundedLoader, _c_loader, load_bounded
from actors.simulation.loader import PackError, compile_pack

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(6)
)
DEEP = "k: " + "[" * 60 + "]" * 60 + "\n"


def test_plain_yaml_loads():
    assert load_bounded("a: [1, 2]\nb: {c: d}\n") == {"a": [1, 2], "b": {"c": "d"}}


def test_an_alias_bomb_is_refused_before_it_expands():
    assert len(yaml.safe_load("a: &a [x]\nb: *a\n")["b"]) == 1  # what an unbounded loader does with one
    with pytest.raises(yaml.YAMLError, match="aliases"):
        load_bounded(BOMB)


def test_nesting_past_the_limit_is_refused():
    with pytest.raises(yaml.YAMLError, match="nested more than"):
        load_bounded(DEEP)
    assert load_bounded("k: " + "[" * 10 + "]" * 10) == {"k": [[[[[[[[[[]]]]]]]]]]}


def test_text_past_the_limit_is_refused_before_it_is_parsed():
    with pytest.raises(ValueError, match="larger than 100 characters"):
        load_bounded("a: " + "x" * 200, BoundedLoader, 100)


@pytest.mark.parametrize("name", ["roadmap.yaml", "roadmap"])
def test_a_roadmap_alias_bomb_or_a_deep_one_is_one_line(name):
    for text in (BOMB.replace("a:", "items:", 1), DEEP):
        try:
            parse_roadmap(text, name)
        except ValueError as e:
            assert "\n" not in str(e)
        else:  # read as markdown (an unknown suffix): then it holds no YAML structure at all
            assert name == "roadmap"


def test_a_roadmap_alias_in_yaml_says_so():
    with pytest.raises(ValueError, match="roadmap.yaml: line 2: not valid YAML .*aliases"):
        parse_roadmap("- &x {title: a}\n- *x\n", "roadmap.yaml")


def test_a_huge_roadmap_is_refused():
    with pytest.raises(ValueError, match="larger than"):
        parse_roadmap("- item\n" * (MAX_YAML_CHARS // 7 + 1), "roadmap.md")


def test_a_content_pack_alias_is_a_pack_error():
    with pytest.raises(PackError, match="aliases"):
        compile_pack(BOMB, "bomb.yaml")


# -- the C parser and the Python one refuse alike ---------------------------------------------------


class PythonOnly(BoundedLoader):
    """A subclass that changes a method reads in Python (the C loader would not run it)."""

    def construct_document(self, node):  # type: ignore[no-untyped-def]
        return super().construct_document(node)


def refusal(text: str, loader: type[BoundedLoader]) -> tuple[str, int, int]:
    with pytest.raises(yaml.YAMLError) as e:
        load_bounded(text, loader)
    mark = e.value.problem_mark  # type: ignore[attr-defined]
    return e.value.problem, mark.line, mark.column  # type: ignore[attr-defined]


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")
def test_the_c_parser_reads_and_refuses_as_the_python_one():
    assert _c_loader(BoundedLoader) is not None and _c_loader(PythonOnly) is None
    edge = "k: " + "[" * 39 + "]" * 39 + "\n"  # the root and 40 levels: at the bound
    for text in ("a: [1, 2]\nb: {c: d, e: 1.5, f: yes, g: ~}\n", edge, "- &x {t: a}\n"):
        assert load_bounded(text) == load_bounded(text, PythonOnly) == yaml.safe_load(text)
    for text in (BOMB, DEEP, "- &x {title: a}\n- *x\n", "a: {b: [c, *d]}\n", "k: " + "[" * 40 + "]" * 40 + "\n"):
        assert refusal(text, BoundedLoader) == refusal(text, PythonOnly)


def test_a_lone_surrogate_is_a_yaml_error_not_a_crash():
    with pytest.raises(yaml.YAMLError):
        load_bounded("a: \ud800\n")


def test_nesting_past_libyamls_own_limit_is_refused_in_our_words_with_its_place():
    deep = "name: deep\nenvironment: " + "[" * 5000 + "]" * 5000  # libyaml's scanner stops at 1,000
    with pytest.raises(yaml.YAMLError) as refused:
        load_bounded(deep)
    assert "levels deep" in str(refused.value) and "line 2" in str(refused.value)
