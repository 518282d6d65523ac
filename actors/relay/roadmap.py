"""The Roadmap (seed 004): the task cut into ordered items, each with the acceptance criteria
the verifier judges a turn by.

A roadmap comes from a person's file (`--roadmap FILE`: YAML, or a markdown list) or from
the Orchestrator's one LLM call. A YAML item may say `allow_check_config: true`: its work
is the checks' own configuration (conftest.py, pytest or ruff settings), so changing it is
not a defect there (actors.relay.check_config); only a person's file can say so. Both are pure here: `parse_roadmap` reads text,
`roadmap_request` / `roadmap_from_reply` build the call and read its recorded answer. A bad
file is the person's mistake, so it raises ValueError with one line: `FILE: where: message`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from actors.runtime.bounded_yaml import MAX_YAML_CHARS, BoundedLoader, load_bounded
from actors.runtime.llm.json_text import parse_json_object
from actors.runtime.llm.types import LlmRequest

MAX_LLM_ITEMS = 6  # a 1.5B model plans worse the longer its list; six small steps is plenty
MAX_LLM_CRITERIA = 3
ROADMAP_MAX_TOKENS = 600

TITLE_KEYS = ("title", "item", "name", "step")
ACCEPTANCE_KEYS = ("acceptance", "acceptance_criteria", "criteria", "accept")
DETAILS_KEYS = ("details", "description", "notes")
ALLOW_CONFIG_KEY = "allow_check_config"
ACCEPT_PREFIX = "- accept: "  # how a chunk marks a criterion


class RoadmapItem(BaseModel):
    """One roadmap step: what to build, and how the verifier will know it is done."""

    model_config = ConfigDict(frozen=True)

    title: str
    acceptance_criteria: list[str] = []
    details: str = ""
    allow_check_config: bool = False  # the builder may change what configures the checks

    def recorded(self) -> dict[str, Any]:
        """The item as RoadmapPlanned records it; `allow_check_config` only when set, so a
        log written before the field existed replays to the same event."""
        data = self.model_dump(mode="json")
        if not self.allow_check_config:
            data.pop("allow_check_config")
        return data

    def chunk(self) -> str:
        """The item as one text (the events' `roadmap_chunk` and the vector memory's query)."""
        parts = [self.title]
        if self.details:
            parts.append(self.details)
        parts.extend(f"{ACCEPT_PREFIX}{c}" for c in self.acceptance_criteria)
        return "\n".join(parts)

    @classmethod
    def from_chunk(cls, chunk: str) -> RoadmapItem:
        """The item a `chunk()` text came from (a RoadmapPlanned event holds only texts)."""
        lines = chunk.split("\n")
        criteria = [line[len(ACCEPT_PREFIX) :] for line in lines[1:] if line.startswith(ACCEPT_PREFIX)]
        details = [line for line in lines[1:] if not line.startswith(ACCEPT_PREFIX)]
        return cls(title=lines[0], acceptance_criteria=criteria, details="\n".join(details))


class Roadmap(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    items: list[RoadmapItem]

    def chunks(self) -> list[str]:
        """The items as texts, in order (what `RoadmapPlanned.roadmap` records)."""
        return [item.chunk() for item in self.items]


# -- from a file -------------------------------------------------------------------------------


def load_roadmap(path: str | Path) -> Roadmap:
    """The roadmap in a file; a missing file, a folder or an unreadable file is one line."""
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise ValueError(f"{name}: is a folder, not a roadmap file")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{name}: no such roadmap file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a text file (it is not UTF-8)") from None
    except OSError as e:
        raise ValueError(f"{name}: cannot read it ({e.strerror or e})") from None
    return parse_roadmap(text, name)


def parse_roadmap(text: str, filename: str) -> Roadmap:
    """A roadmap from YAML or a markdown list. `.yaml`/`.yml` is YAML, `.md`/`.markdown`/
    `.txt` markdown; any other name is YAML when it reads as a mapping or a list of
    mappings, else markdown (a markdown list is also a YAML list, but loses its heading)."""
    if not text.strip():
        raise ValueError(f"{filename}: roadmap: the file is empty")
    if len(text) > MAX_YAML_CHARS:
        raise ValueError(f"{filename}: roadmap: larger than {MAX_YAML_CHARS} characters, the most a roadmap may be")
    suffix = Path(filename).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _from_yaml(_load_yaml(text, filename), filename)
    if suffix in (".md", ".markdown", ".txt"):
        return _from_markdown(text, filename)
    try:
        data = load_bounded(text, RoadmapLoader)
    except (yaml.YAMLError, ValueError):
        data = None
    if isinstance(data, dict) or (isinstance(data, list) and any(isinstance(x, dict) for x in data)):
        return _from_yaml(data, filename)
    return _from_markdown(text, filename)


class RoadmapLoader(BoundedLoader):
    what = "a roadmap"


def _load_yaml(text: str, filename: str) -> Any:
    try:
        return load_bounded(text, RoadmapLoader)
    except ValueError as e:
        raise ValueError(f"{filename}: {e}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "yaml"
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ValueError(f"{filename}: {where}: not valid YAML ({problem})") from None


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def _criteria(value: Any, filename: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [_one_line(value)] if value.strip() else []
    if not isinstance(value, list):
        raise ValueError(f"{filename}: {where}: acceptance must be a list of criteria, not {type(value).__name__}")
    out = []
    for i, c in enumerate(value):
        if isinstance(c, (dict, list)):
            raise ValueError(f"{filename}: {where}[{i}]: an acceptance criterion must be a sentence")
        if c is not None and str(c).strip():
            out.append(_one_line(c))
    return out


def _yaml_item(raw: Any, filename: str, where: str) -> RoadmapItem:
    if isinstance(raw, str):
        if not raw.strip():
            raise ValueError(f"{filename}: {where}: the item has no title")
        return RoadmapItem(title=_one_line(raw))
    if not isinstance(raw, dict):
        raise ValueError(f"{filename}: {where}: an item is a title or a mapping, not {type(raw).__name__}")
    known = {*TITLE_KEYS, *ACCEPTANCE_KEYS, *DETAILS_KEYS, ALLOW_CONFIG_KEY}
    keys = [str(k) for k in raw]
    if len(raw) == 1 and keys[0] not in known:  # `- Set up the project: [criteria...]`
        title, value = next(iter(raw.items()))
        return RoadmapItem(title=_one_line(title), acceptance_criteria=_criteria(value, filename, f"{where}.{title}"))
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ValueError(
            f"{filename}: {where}: unknown key {unknown[0]!r} (an item has title, acceptance, details, "
            f"{ALLOW_CONFIG_KEY})"
        )
    allow = raw.get(ALLOW_CONFIG_KEY, False)
    if not isinstance(allow, bool):
        raise ValueError(f"{filename}: {where}.{ALLOW_CONFIG_KEY}: must be true or false, not {allow!r}")
    title = next((raw[k] for k in TITLE_KEYS if k in raw), None)
    if title is None or isinstance(title, (dict, list)) or not str(title).strip():
        raise ValueError(f"{filename}: {where}: the item has no title")
    acc_key = next((k for k in ACCEPTANCE_KEYS if k in raw), None)
    details = next((raw[k] for k in DETAILS_KEYS if k in raw), "") or ""
    return RoadmapItem(
        title=_one_line(title),
        acceptance_criteria=_criteria(raw.get(acc_key), filename, f"{where}.{acc_key}") if acc_key else [],
        details=str(details).strip(),
        allow_check_config=allow,
    )


def _from_yaml(data: Any, filename: str) -> Roadmap:
    task = ""
    if isinstance(data, dict):
        unknown = [str(k) for k in data if k not in ("task", "goal", "items", "roadmap")]
        if unknown:
            raise ValueError(f"{filename}: top level: unknown key {unknown[0]!r} (expected task and items)")
        task = _one_line(data.get("task") or data.get("goal") or "")
        items = data.get("items", data.get("roadmap"))
        if items is None:
            raise ValueError(f"{filename}: items: the roadmap has no items")
    elif isinstance(data, list):
        items = data
    else:
        raise ValueError(f"{filename}: roadmap: neither YAML (task and items) nor a markdown list of items")
    if not isinstance(items, list):
        raise ValueError(f"{filename}: items: must be a list, not {type(items).__name__}")
    if not items:
        raise ValueError(f"{filename}: items: the roadmap has no items")
    return Roadmap(task=task, items=[_yaml_item(raw, filename, f"items[{i}]") for i, raw in enumerate(items)])


# -- markdown ----------------------------------------------------------------------------------

_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])(?:\s+(.*))?$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s*")
_ACCEPT = re.compile(
    r"^(?:\*\*|__)?(?:accept(?:ance)?(?:\s+criteri(?:a|on))?|criteri(?:a|on)|done when)(?:\*\*|__)?\s*:\s*(.*)$",
    re.I,
)
_DETAILS = re.compile(r"^(?:\*\*|__)?(?:details?|notes?)(?:\*\*|__)?\s*:\s*(.*)$", re.I)


def _clean(text: str) -> str:
    text = _CHECKBOX.sub("", text.strip())
    if len(text) > 4 and text[:2] in ("**", "__") and text.endswith(text[:2]):
        text = text[2:-2].strip()
    return " ".join(text.split())


def _from_markdown(text: str, filename: str) -> Roadmap:
    """Top-level list lines are items; deeper bullets are acceptance criteria (`accept:`
    optional), `details:` bullets and indented prose are details; the first heading, or
    else the first prose line before the list, is the task."""
    task = ""
    items: list[dict[str, Any]] = []
    top: int | None = None  # the indent of item bullets
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            if not task and not items:
                task = _clean(heading.group(1))
            continue
        bullet = _BULLET.match(line)
        indent = len(line) - len(line.lstrip())
        if bullet and (top is None or indent <= top):
            top = indent if top is None else top
            title = _clean(bullet.group(2) or "")
            if not title:
                raise ValueError(f"{filename}: line {number}: the item has no title")
            items.append({"title": title, "acceptance": [], "details": []})
            continue
        if bullet and items:
            body = _clean(bullet.group(2) or "")
            detail = _DETAILS.match(body)
            accept = _ACCEPT.match(body)
            if detail:
                if detail.group(1).strip():
                    items[-1]["details"].append(detail.group(1).strip())
            elif accept:
                if accept.group(1).strip():  # "acceptance:" alone heads the deeper bullets
                    items[-1]["acceptance"].append(_clean(accept.group(1)))
            elif body:
                items[-1]["acceptance"].append(body)
            continue
        if items and indent > (top or 0):
            detail = _DETAILS.match(line.strip())
            items[-1]["details"].append(detail.group(1).strip() if detail else line.strip())
        elif not items and not task:
            task = _clean(line)
    if not items:
        raise ValueError(f"{filename}: roadmap: no items (neither YAML nor a markdown list of `- item` lines)")
    return Roadmap(
        task=task,
        items=[
            RoadmapItem(title=i["title"], acceptance_criteria=i["acceptance"], details="\n".join(i["details"]))
            for i in items
        ],
    )


# -- from the Orchestrator's model --------------------------------------------------------------

ORCHESTRATOR_SYSTEM = f"""You are the Orchestrator. You cut a programming goal into a short roadmap of steps.
Reply with one JSON object only: {{"items": [{{"title": "...", "acceptance": ["...", "..."]}}]}}
- At most {MAX_LLM_ITEMS} items, in the order to build them. Fewer is better for a small goal.
- title: one short imperative sentence (what to build in this step).
- acceptance: 1 to {MAX_LLM_CRITERIA} checks that show the step is done, each one short sentence
  a test or a reader can verify (e.g. "add(2, 3) returns 5").
No prose outside the JSON."""


def roadmap_schema() -> dict[str, Any]:
    """Flat and short, so llama.cpp's grammar and a 1.5B model both manage it."""
    return {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_LLM_ITEMS,
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "acceptance": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_LLM_CRITERIA,
                            "items": {"type": "string"},
                        },
                    },
                    "required": ["title", "acceptance"],
                },
            }
        },
        "required": ["items"],
    }


def roadmap_request(goal: str, model: str, params: dict[str, Any]) -> LlmRequest:
    """The Orchestrator's one call: the goal in, a roadmap as JSON out."""
    return LlmRequest(
        model=model,
        messages=[
            {"role": "system", "content": ORCHESTRATOR_SYSTEM},
            {"role": "user", "content": f"Goal: {goal.strip()}\n\nThe roadmap as JSON:"},
        ],
        params={"max_tokens": ROADMAP_MAX_TOKENS, "temperature": 0.2, **params},
        response_schema=roadmap_schema(),
    )


def roadmap_from_reply(goal: str, content_or_parsed: str | dict[str, Any] | list[Any] | None) -> Roadmap:
    """The roadmap in the model's reply (its text or its parsed object), capped at
    MAX_LLM_ITEMS items of MAX_LLM_CRITERIA criteria; items without a title are dropped.
    ValueError (one line) when nothing usable is left: the caller decides what then."""
    data: Any = content_or_parsed
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            data = parse_json_object(data)
    raw_items: Any = None
    if isinstance(data, dict):
        raw_items = next((data[k] for k in ("items", "roadmap", "steps") if k in data), None)
    elif isinstance(data, list):
        raw_items = data
    if not isinstance(raw_items, list):
        shown = str(content_or_parsed)[:120].replace("\n", " ")
        raise ValueError(f"unusable roadmap reply: no list of items in {shown!r}")
    items: list[RoadmapItem] = []
    for raw in raw_items:
        if isinstance(raw, str) and raw.strip():
            items.append(RoadmapItem(title=_one_line(raw)))
            continue
        if not isinstance(raw, dict):
            continue
        title = next((raw[k] for k in TITLE_KEYS if isinstance(raw.get(k), str) and raw[k].strip()), None)
        if title is None:
            continue
        acc: Any = next((raw[k] for k in ACCEPTANCE_KEYS if k in raw), [])
        acc_list = [acc] if isinstance(acc, str) else acc if isinstance(acc, list) else []
        criteria = [_one_line(c) for c in acc_list if isinstance(c, (str, int, float)) and str(c).strip()]
        items.append(RoadmapItem(title=_one_line(title), acceptance_criteria=criteria[:MAX_LLM_CRITERIA]))
    if not items:
        raise ValueError("unusable roadmap reply: no item has a title")
    return Roadmap(task=" ".join(goal.split()), items=items[:MAX_LLM_ITEMS])
