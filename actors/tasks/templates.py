"""Atomic task templates in XML, checked against a schema at registration (seed 001's Compiler).

    <task name="summarize-file">
      <description>Summarize one file.</description>
      <params><param name="path" required="true">file to summarize</param></params>
      <context inherit="false" fresh="false"/>
      <files><file>{{path}}</file></files>
      <system>You are a concise technical writer.</system>
      <instructions>Summarize {{path}} in three sentences.</instructions>
      <output format="text"/>
      <limits turns="2" tokens="6000"/>
    </task>

The schema is the table `SCHEMA` below, checked with the standard library's ElementTree plus
explicit rules (an XSD validator is not in the standard library, and this one also checks what
XSD cannot: every `{{placeholder}}` names a declared parameter, JSON schemas parse). A bad
template raises `TemplateError` saying which file, which element and why.

`substitute` fills `{{param}}` from the given params only, in one pass (a value that itself
contains `{{x}}` is not expanded again); a placeholder with no value raises `MissingParam`,
so a literal `{{x}}` never reaches a model.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*\Z")
PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
BOOL = ("true", "false")
BUILTIN_DIR = Path(__file__).parent / "templates"

# element -> (allowed attributes {name: kind}, required attributes, allowed children
# {name: (min, max)}, whether text is allowed). Kinds: "name", "param", "bool", "posint",
# "format", "str".
SCHEMA: dict[str, tuple[dict[str, str], set[str], dict[str, tuple[int, int | None]], bool]] = {
    "task": (
        {"name": "name", "version": "str"},
        {"name"},
        {
            "description": (0, 1),
            "params": (0, 1),
            "context": (0, 1),
            "files": (0, 1),
            "tools": (0, 1),
            "system": (0, 1),
            "instructions": (1, 1),
            "output": (0, 1),
            "limits": (0, 1),
        },
        False,
    ),
    "description": ({}, set(), {}, True),
    "params": ({}, set(), {"param": (0, None)}, False),
    "param": ({"name": "param", "required": "bool", "default": "str"}, {"name"}, {}, True),
    "context": ({"inherit": "bool", "fresh": "bool"}, set(), {}, False),
    "files": ({}, set(), {"file": (0, None)}, False),
    "file": ({}, set(), {}, True),
    "tools": ({}, set(), {"tool": (0, None)}, False),
    "tool": ({"name": "name"}, {"name"}, {}, False),
    "system": ({}, set(), {}, True),
    "instructions": ({}, set(), {}, True),
    "output": ({"format": "format"}, set(), {"schema": (0, 1)}, False),
    "schema": ({}, set(), {}, True),
    "limits": ({"turns": "posint", "tokens": "posint"}, set(), {}, False),
}
DEFAULT_TURNS = 3
DEFAULT_TOKENS = 8000


class TemplateError(ValueError):
    """A template that does not satisfy the schema: refused at registration."""


class MissingParam(LookupError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no value for parameter {{{{{name}}}}}")


class ParamSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    required: bool = True
    default: str | None = None
    description: str = ""


class AtomicTemplate(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    params: list[ParamSpec] = []
    inherit_context: bool = False
    fresh_context: bool = False
    files: list[str] = []
    tools: list[str] = []
    system: str = ""
    instructions: str
    output_format: str = "text"  # "text" | "json"
    output_schema: dict[str, Any] | None = None
    max_turns: int = DEFAULT_TURNS
    max_tokens: int = DEFAULT_TOKENS
    source: str = ""

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)


def parse_template(source: str, origin: str = "template") -> AtomicTemplate:
    """Validate `source` against the schema and return the template, or raise TemplateError."""
    if re.search(r"<!(DOCTYPE|ENTITY)", source):
        raise TemplateError(f"{origin}: DOCTYPE and ENTITY declarations are not allowed in templates")
    try:
        root = ET.fromstring(source)
    except ET.ParseError as e:
        line, col = e.position
        raise TemplateError(f"{origin}: not well-formed XML at line {line}, column {col + 1}: {_reason(e)}") from None
    if root.tag != "task":
        raise TemplateError(f"{origin}: the root element must be <task>, not <{root.tag}>")
    _check(root, origin, "task")
    params = [
        ParamSpec(
            name=p.get("name", ""),
            required=p.get("required", "true" if p.get("default") is None else "false") == "true",
            default=p.get("default"),
            description=(p.text or "").strip(),
        )
        for p in root.iterfind("params/param")
    ]
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise TemplateError(f"{origin}: parameter {dup!r} is declared twice")
    output = root.find("output")
    fmt = output.get("format", "text") if output is not None else "text"
    schema = None
    schema_el = output.find("schema") if output is not None else None
    if schema_el is not None:
        if fmt != "json":
            raise TemplateError(f"{origin}: <output> has a <schema> but format is {fmt!r}, not 'json'")
        try:
            schema = json.loads(schema_el.text or "")
        except ValueError as e:
            raise TemplateError(f"{origin}: <schema> is not valid JSON: {e}") from None
        if not isinstance(schema, dict):
            raise TemplateError(f"{origin}: <schema> must be a JSON object")
    context = root.find("context")
    limits = root.find("limits")
    template = AtomicTemplate(
        name=root.get("name", ""),
        description=_text(root, "description"),
        params=params,
        inherit_context=context is not None and context.get("inherit") == "true",
        fresh_context=context is not None and context.get("fresh") == "true",
        files=[(f.text or "").strip() for f in root.iterfind("files/file")],
        tools=[t.get("name", "") for t in root.iterfind("tools/tool")],
        system=_text(root, "system"),
        instructions=_text(root, "instructions"),
        output_format=fmt,
        output_schema=schema,
        max_turns=int(limits.get("turns", DEFAULT_TURNS)) if limits is not None else DEFAULT_TURNS,
        max_tokens=int(limits.get("tokens", DEFAULT_TOKENS)) if limits is not None else DEFAULT_TOKENS,
        source=source,
    )
    if not template.instructions:
        raise TemplateError(f"{origin}: <instructions> is empty")
    for where, text in [("system", template.system), ("instructions", template.instructions)] + [
        ("file", f) for f in template.files
    ]:
        for name in placeholders(text):
            if name not in names:
                raise TemplateError(
                    f"{origin}: <{where}> uses {{{{{name}}}}} but no <param name=\"{name}\"> is declared"
                )
    return template


def _reason(e: ET.ParseError) -> str:
    return str(e).split(":")[0]


def _text(root: ET.Element, tag: str) -> str:
    el = root.find(tag)
    return (el.text or "").strip() if el is not None else ""


def _check(el: ET.Element, origin: str, path: str) -> None:
    spec = SCHEMA.get(el.tag)
    if spec is None:
        raise TemplateError(f"{origin}: unknown element <{el.tag}> in <{path}>")
    attrs, required, children, text_ok = spec
    for attr, value in el.attrib.items():
        kind = attrs.get(attr)
        if kind is None:
            allowed = ", ".join(sorted(attrs)) or "none"
            raise TemplateError(f"{origin}: <{el.tag}> has no attribute {attr!r} (allowed: {allowed})")
        problem = _bad_value(kind, value)
        if problem:
            raise TemplateError(f"{origin}: <{el.tag}> attribute {attr}={value!r} {problem}")
    for attr in sorted(required - set(el.attrib)):
        raise TemplateError(f"{origin}: <{el.tag}> needs the attribute {attr!r}")
    if not text_ok and (el.text or "").strip():
        raise TemplateError(f"{origin}: <{el.tag}> takes no text, only elements")
    counts: dict[str, int] = {}
    for child in el:
        if child.tag not in children:
            allowed = ", ".join(f"<{c}>" for c in children) or "no elements"
            raise TemplateError(f"{origin}: <{child.tag}> is not allowed in <{el.tag}> (allowed: {allowed})")
        counts[child.tag] = counts.get(child.tag, 0) + 1
        if (child.tail or "").strip():
            raise TemplateError(f"{origin}: stray text after <{child.tag}> in <{el.tag}>")
        _check(child, origin, f"{path}/{child.tag}")
    for tag, (low, high) in children.items():
        n = counts.get(tag, 0)
        if n < low:
            raise TemplateError(f"{origin}: <{el.tag}> needs a <{tag}> element")
        if high is not None and n > high:
            raise TemplateError(f"{origin}: <{el.tag}> may have at most {high} <{tag}>, found {n}")


def _bad_value(kind: str, value: str) -> str:
    if kind == "name" and not NAME.match(value):
        return "is not a valid name (letters, digits, _ . : -; starting with a letter)"
    if kind == "param" and not PARAM.match(value):
        return "is not a valid parameter name (letters, digits and _)"
    if kind == "bool" and value not in BOOL:
        return "must be true or false"
    if kind == "posint" and not (value.isdigit() and int(value) > 0):
        return "must be a positive integer"
    if kind == "format" and value not in ("text", "json"):
        return "must be text or json"
    return ""


def placeholders(text: str) -> list[str]:
    return [m.group(1) for m in PLACEHOLDER.finditer(text)]


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):  # a TaskResult: its content
        value = value.model_dump(mode="json").get("content")
        if isinstance(value, str):
            return value
    return json.dumps(value, ensure_ascii=False, default=str)


def substitute(text: str, params: dict[str, Any]) -> str:
    """Fill every {{name}} from params, in one pass; MissingParam for any without a value."""

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in params or params[name] is None:
            raise MissingParam(name)
        return render_value(params[name])

    return PLACEHOLDER.sub(fill, text)


def load_dir(folder: str | Path) -> dict[str, str]:
    """The XML sources of `folder`'s *.xml files, by template name (each validated)."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise TemplateError(f"templates folder {folder} does not exist")
    out: dict[str, str] = {}
    for file in sorted(path.glob("*.xml")):
        try:
            source = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise TemplateError(f"{file}: cannot read: {e}") from None
        template = parse_template(source, str(file))
        out[template.name] = source
    return out


def builtin_sources() -> dict[str, str]:
    return load_dir(BUILTIN_DIR)
