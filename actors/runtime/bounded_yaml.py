"""YAML a person or a request sent, loaded with bounds: no aliases (a billion-laughs document
of a few hundred bytes expands to gigabytes), nesting at most `max_depth` deep, and at most
`max_chars` of text. Every YAML document Chorus reads from outside goes through here (the
simulation's content packs, the relay's roadmaps)."""

from __future__ import annotations

from typing import Any

import yaml

MAX_YAML_CHARS = 1_000_000
MAX_YAML_DEPTH = 40


class BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses aliases and nesting deeper than `max_depth`."""

    max_depth = MAX_YAML_DEPTH
    what = "a YAML document"  # for the error: "YAML aliases (*name) are not allowed in ..."
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"YAML aliases (*name) are not allowed in {self.what}", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {self.max_depth} levels deep", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_bounded(text: str, loader: type[BoundedLoader] = BoundedLoader, max_chars: int = MAX_YAML_CHARS) -> Any:
    """The document in `text`. ValueError for text over `max_chars`; yaml.YAMLError (with
    its mark) for an alias, too deep a nesting or bad syntax."""
    if len(text) > max_chars:
        raise ValueError(f"larger than {max_chars} characters, the most {loader.what} may be")
    return yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
