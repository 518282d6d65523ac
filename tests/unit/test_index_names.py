"""The definitions ranking's pure parts (actors/index/names.py): which names a chunk defines,
which code names a question gives, and the order of the chunks that define them."""

from __future__ import annotations

from actors.index.names import DefinitionIndex, defined_names, question_names

PY = '''"""Docs: class Hidden is only mentioned here."""
import zlib

LIMIT = 3
timeout: float = 2.5
if LIMIT == 3:
    pass


class Packer(Base):
    level = 9

    def pack(self, obj):
        return zlib.compress(obj, self.level)

    async def flush(self):
        pass
'''


def test_python_definitions_are_classes_functions_and_module_assignments():
    names = defined_names(PY, "python")
    assert names == {"LIMIT", "timeout", "Packer", "pack", "flush"}
    # a comparison, a mention in prose and a class attribute are not module-level definitions
    assert "Hidden" not in names and "level" not in names


def test_other_languages_take_the_name_after_a_definition_keyword():
    go = "package x\n\nfunc (s *Server) Serve(addr string) error {\n}\n\ntype Config struct {\n}\n"
    assert defined_names(go, "go") == {"Serve", "Config"}
    assert defined_names("export function renderPage(t) {}\nclass Cart {}\n", "javascript") == {"renderPage", "Cart"}


def test_question_names_are_code_shaped_words_not_sentence_words():
    assert question_names("How does ReceiveBuffer.maybe_extract_lines find the blank line?") == [
        "ReceiveBuffer", "maybe_extract_lines",
    ]
    assert question_names("What is MAX_WAIT, and which class uses it? The Packer class") == ["MAX_WAIT", "Packer"]
    # a capital at the start of a sentence is a word; a lone capitalised word after it is a name
    assert question_names("Where are cookies stored? Which function reads them") == []
    assert question_names("where does the Config class read its defaults") == ["Config"]
    assert question_names("How are cookies kept for the next request?") == []


def test_chunks_defining_more_of_the_question_s_names_rank_first():
    index = DefinitionIndex([
        ("def helper():\n    return Packer().pack(1)\n", "python"),  # mentions both, defines neither
        ("class Packer:\n    pass\n", "python"),
        ("class Packer:\n    def pack(self):\n        pass\n", "python"),
        ("def pack(x):\n    pass\n", "python"),
    ])
    assert index.rank("How does Packer.pack compress?") == [2, 1, 3]
    assert index.rank("How does Packer.pack compress?", allowed=[True, False, True, True]) == [2, 3]
    assert index.rank("How are cookies kept?") == []
    assert index.rank("How does Packer.pack compress?", limit=1) == [2]
