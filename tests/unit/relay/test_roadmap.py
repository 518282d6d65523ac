"""The Roadmap from a person's file (YAML or a markdown list) and from the Orchestrator's
model: items keep their acceptance criteria, bad files are one line naming the file."""

from __future__ import annotations

import json

import pytest

from actors.relay.roadmap import (
    MAX_LLM_ITEMS,
    Roadmap,
    RoadmapItem,
    load_roadmap,
    parse_roadmap,
    roadmap_from_reply,
    roadmap_request,
)

YAML_ROADMAP = """\
task: Build a calculator library
items:
  - title: Create the add function
    acceptance:
      - add(2, 3) returns 5
      - add works on negative numbers
    details: Put it in calc.py
  - title: Create subtract
    acceptance: subtract(5, 3) returns 2
  - Write a README
  - Add multiply:
      - multiply(2, 3) returns 6
"""

MARKDOWN_ROADMAP = """\
# Build a REST API with authentication

Some words about the project that are not items.

1. Set up project structure
   - accept: pyproject.toml exists
   - a `src/api` package imports
2. **Create database models**
   - acceptance:
     - a User model with email and password hash
   details: use SQLite
3. [ ] Write tests
"""


def test_yaml_roadmap_keeps_task_items_and_acceptance_criteria() -> None:
    roadmap = parse_roadmap(YAML_ROADMAP, "plan.yaml")
    assert roadmap.task == "Build a calculator library"
    assert [i.title for i in roadmap.items] == [
        "Create the add function",
        "Create subtract",
        "Write a README",
        "Add multiply",
    ]
    assert roadmap.items[0].acceptance_criteria == ["add(2, 3) returns 5", "add works on negative numbers"]
    assert roadmap.items[0].details == "Put it in calc.py"
    assert roadmap.items[1].acceptance_criteria == ["subtract(5, 3) returns 2"]
    assert roadmap.items[2].acceptance_criteria == []
    assert roadmap.items[3].acceptance_criteria == ["multiply(2, 3) returns 6"]


def test_yaml_plain_list_of_items() -> None:
    roadmap = parse_roadmap("- title: one\n  acceptance: [it works]\n- two\n", "plan.yml")
    assert roadmap.task == ""
    assert roadmap.items == [RoadmapItem(title="one", acceptance_criteria=["it works"]), RoadmapItem(title="two")]


def test_markdown_roadmap_heading_items_and_sub_bullets() -> None:
    roadmap = parse_roadmap(MARKDOWN_ROADMAP, "plan.md")
    assert roadmap.task == "Build a REST API with authentication"
    assert [i.title for i in roadmap.items] == ["Set up project structure", "Create database models", "Write tests"]
    assert roadmap.items[0].acceptance_criteria == ["pyproject.toml exists", "a `src/api` package imports"]
    assert roadmap.items[1].acceptance_criteria == ["a User model with email and password hash"]
    assert roadmap.items[1].details == "use SQLite"
    assert roadmap.items[2].acceptance_criteria == []


def test_markdown_first_line_is_the_task_without_a_heading() -> None:
    roadmap = parse_roadmap("Make a todo app\n- add todos\n  - adding one shows it\n- delete todos\n", "todo.txt")
    assert roadmap.task == "Make a todo app"
    assert [i.title for i in roadmap.items] == ["add todos", "delete todos"]
    assert roadmap.items[0].acceptance_criteria == ["adding one shows it"]


def test_unknown_extension_reads_a_markdown_list_with_its_heading() -> None:
    # a markdown list is also YAML (and YAML would drop the heading as a comment)
    roadmap = parse_roadmap("# Goal here\n- first\n- second\n", "ROADMAP")
    assert roadmap.task == "Goal here"
    assert [i.title for i in roadmap.items] == ["first", "second"]
    assert parse_roadmap("task: T\nitems: [a, b]\n", "ROADMAP").task == "T"


def test_chunks_carry_the_criteria_for_the_events() -> None:
    roadmap = parse_roadmap(YAML_ROADMAP, "plan.yaml")
    assert roadmap.chunks()[0].startswith("Create the add function")
    assert "- accept: add(2, 3) returns 5" in roadmap.chunks()[0]
    for item in roadmap.items:  # and the scheduler gets the items back from the event
        assert RoadmapItem.from_chunk(item.chunk()) == item


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        ("", "plan.md", "plan.md: roadmap: the file is empty"),
        ("   \n", "plan.yaml", "plan.yaml: roadmap: the file is empty"),
        ("just some prose\nand more prose\n", "plan.md", "plan.md: roadmap: no items"),
        ("task: x\nitems: []\n", "plan.yaml", "plan.yaml: items: the roadmap has no items"),
        ("task: x\n", "plan.yaml", "plan.yaml: items: the roadmap has no items"),
        ("items:\n  - title: ok\n  - acceptance: [x]\n", "plan.yaml", "plan.yaml: items[1]: the item has no title"),
        ("items:\n  - title: ok\n    acceptence: [x]\n", "plan.yaml", "plan.yaml: items[0]: unknown key 'acceptence'"),
        ("items: [a, b\n", "plan.yaml", "plan.yaml: line 2: not valid YAML"),
        ("just a sentence\n", "plan.yaml", "plan.yaml: roadmap: neither YAML"),
        ("- first\n-\n", "plan.md", "plan.md: line 2: the item has no title"),
    ],
)
def test_bad_roadmaps_are_one_line_naming_the_file(text: str, name: str, expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_roadmap(text, name)
    message = str(caught.value)
    assert message.startswith(expected)
    assert "\n" not in message


def test_load_roadmap_reads_a_file_and_refuses_missing_and_folders(tmp_path) -> None:
    path = tmp_path / "plan.md"
    path.write_text(MARKDOWN_ROADMAP)
    assert len(load_roadmap(path).items) == 3
    with pytest.raises(ValueError, match=r"nope\.yaml: no such roadmap file$"):
        load_roadmap(tmp_path / "nope.yaml")
    with pytest.raises(ValueError, match="is a folder"):
        load_roadmap(tmp_path)
    binary = tmp_path / "plan.bin"
    binary.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(ValueError, match="not a text file"):
        load_roadmap(binary)


def test_roadmap_request_is_small_and_schema_bound() -> None:
    request = roadmap_request("Build a calculator", "local", {"temperature": 0.0})
    assert request.model == "local"
    assert request.params["temperature"] == 0.0
    assert request.params["max_tokens"] <= 1024
    assert "Goal: Build a calculator" in request.messages[-1]["content"]
    schema = request.response_schema
    assert schema is not None
    items = schema["properties"]["items"]
    assert items["maxItems"] == MAX_LLM_ITEMS
    assert set(items["items"]["required"]) == {"title", "acceptance"}


def test_roadmap_from_reply_reads_text_or_parsed_and_caps_it() -> None:
    parsed = {
        "items": [{"title": f"step {n}", "acceptance": ["a", "b", "c", "d"]} for n in range(9)]
        + [{"acceptance": ["orphan"]}]
    }
    roadmap = roadmap_from_reply("  Build   it ", parsed)
    assert isinstance(roadmap, Roadmap)
    assert roadmap.task == "Build it"
    assert len(roadmap.items) == MAX_LLM_ITEMS
    assert roadmap.items[0].acceptance_criteria == ["a", "b", "c"]
    fenced = "Here you go:\n```json\n" + json.dumps({"items": [{"title": "only", "acceptance": "it runs"}]}) + "\n```"
    assert roadmap_from_reply("g", fenced).items == [RoadmapItem(title="only", acceptance_criteria=["it runs"])]


@pytest.mark.parametrize(
    "reply", ["I cannot help with that.", {"items": []}, {"items": [{"acceptance": ["x"]}]}, None, {"foo": 1}]
)
def test_roadmap_from_unusable_reply_raises(reply) -> None:
    with pytest.raises(ValueError, match="unusable roadmap reply"):
        roadmap_from_reply("goal", reply)
