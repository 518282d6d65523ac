"""YAML a person or a request sent, loaded with bounds: no aliases (a billion-laughs document
of a few hundred bytes expands to gigabytes), nesting at most `max_depth` deep, and at most
`max_chars` of text. Every YAML document Chorus reads from outside goes through here (the
simulation's content packs, the relay's roadmaps).

With PyYAML built on libyaml (its wheels are), a document is read by the C parser: its
events are walked once for the bounds (an alias or a node too deep is refused there, before
anything is composed), then `yaml.CSafeLoader` builds it, with the resolvers and
constructors of the loader given. Without libyaml, or for a loader subclass that overrides a
method, the pure-Python `BoundedLoader` refuses the same documents with the same errors.
"""

from __future__ import annotations

import inspect
from typing import Any

import yaml

try:
    from yaml import CSafeLoader
except ImportError:  # PyYAML built without libyaml
    CSafeLoader = None

MAX_YAML_CHARS = 1_000_000
MAX_YAML_DEPTH = 40
# What a loader subclass may set and still be read by the C parser: the tables that
# `add_implicit_resolver` / `add_constructor` fill, and the bounds.
_TABLES = ("yaml_implicit_resolvers", "yaml_path_resolvers", "yaml_constructors", "yaml_multi_constructors")
_C_LOADERS: dict[type, type | None] = {}


class BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses aliases and nesting deeper than `max_depth`."""

    max_depth = MAX_YAML_DEPTH
    what = "a YAML document"  # for the error: "YAML aliases (*name) are not allowed in ..."
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            _check(type(self), self.peek_event(), self._depth)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check(loader: type[BoundedLoader], event: Any, depth: int) -> None:
    """ComposerError if the node starting with `event`, `depth` deep (the document's root is
    1), breaks a bound of `loader`."""
    if isinstance(event, yaml.AliasEvent):
        raise yaml.composer.ComposerError(None, None, f"YAML aliases (*name) are not allowed in {loader.what}", event.start_mark)
    if depth > loader.max_depth:
        raise yaml.composer.ComposerError(None, None, f"nested more than {loader.max_depth} levels deep", event.start_mark)


def _c_loader(loader: type[BoundedLoader]) -> type | None:
    """`yaml.CSafeLoader` with `loader`'s resolvers and constructors (made once per loader);
    None without libyaml or when a subclass of BoundedLoader changes a method (it then reads
    in Python)."""
    if loader not in _C_LOADERS:
        fast = None
        below = loader.__mro__[: loader.__mro__.index(BoundedLoader)]
        if CSafeLoader is not None and not any(
            inspect.isroutine(v) or isinstance(v, (classmethod, staticmethod)) for cls in below for v in vars(cls).values()
        ):
            fast = type(f"C{loader.__name__}", (CSafeLoader,), {name: getattr(loader, name) for name in _TABLES})
        _C_LOADERS[loader] = fast
    return _C_LOADERS[loader]


def _check_events(text: str, loader: type[BoundedLoader]) -> None:
    """Walk `text`'s events in the C parser, refusing an alias or a node past the depth
    bound as `BoundedLoader.compose_node` does; nothing is composed."""
    parser = CSafeLoader(text)
    depth = 0  # collections open around the next event
    try:
        while _next_event(parser, loader):
            event = parser.get_event()
            if isinstance(event, yaml.NodeEvent):
                _check(loader, event, depth + 1)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        parser.dispose()


def _next_event(parser: Any, loader: type[BoundedLoader]) -> bool:
    """Whether an event follows; libyaml's own nesting limit (its scanner reads ahead, so it
    can be reached before our bound is) is said in our words."""
    try:
        return bool(parser.check_event())
    except yaml.scanner.ScannerError as e:
        if "maximum nesting depth" not in str(e.problem):
            raise
        raise yaml.composer.ComposerError(None, None, f"nested more than {loader.max_depth} levels deep", e.problem_mark) from None


def load_bounded(text: str, loader: type[BoundedLoader] = BoundedLoader, max_chars: int = MAX_YAML_CHARS) -> Any:
    """The document in `text`. ValueError for text over `max_chars`; yaml.YAMLError (with
    its mark) for an alias, too deep a nesting or bad syntax."""
    if len(text) > max_chars:
        raise ValueError(f"larger than {max_chars} characters, the most {loader.what} may be")
    fast = _c_loader(loader)
    if fast is not None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: libyaml cannot take it; Python's reader refuses it
            fast = None
    if fast is None:
        return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
    _check_events(text, loader)
    return yaml.load(text, Loader=fast)  # noqa: S506 (a safe loader, C)
