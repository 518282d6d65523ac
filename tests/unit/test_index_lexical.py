"""The repository index's lexical side, pure: code-aware tokens (identifier splitting, path
components), BM25 over them with a filter mask, reciprocal rank fusion, and chunk headers."""

from __future__ import annotations

import pytest

from actors.index.chunking import chunk_text, with_headers
from actors.index.lexical import LexicalIndex, code_tokens, fuse, identifier_pieces, path_tokens


def test_identifiers_split_on_snake_camel_and_dots_and_stay_whole():
    assert identifier_pieces("append_events") == ["append_events", "append", "events"]
    assert identifier_pieces("AESCipher") == ["aescipher", "aes", "cipher"]
    dotted = identifier_pieces("HTTPServer.send_json")
    assert dotted[0] == "httpserver.send_json" and len(dotted) == len(set(dotted))
    assert set(dotted) == {"httpserver.send_json", "httpserver", "send_json", "http", "server", "send", "json"}
    assert identifier_pieces("_private") == ["private"]
    assert identifier_pieces("__") == []
    assert identifier_pieces("getHTTP2Response") == ["gethttp2response", "get", "http", "2", "response"]
    assert code_tokens("getHTTP2Response")[-1] == "response" and "2" not in code_tokens("getHTTP2Response")


def test_text_tokens_drop_stop_words_and_single_letters():
    tokens = code_tokens("Which class encrypts the events? x = AESCipher(key)")
    assert "which" not in tokens and "the" not in tokens and "x" not in tokens
    assert {"class", "encrypts", "events", "aescipher", "aes", "cipher", "key"} <= set(tokens)


def test_path_tokens_are_folders_file_name_and_stem_pieces():
    tokens = path_tokens("eventsourcing/persistence_postgres.py")
    assert tokens[:2] == ["eventsourcing", "persistence_postgres.py"]
    assert set(tokens) == {"eventsourcing", "persistence_postgres.py", "persistence_postgres", "persistence", "postgres", "py"}


def test_bm25_finds_a_document_by_an_identifier_piece_and_respects_the_mask():
    docs = [
        ("pkg/cipher.py", "class AESCipher:\n    def encrypt(self, data): ..."),
        ("pkg/compress.py", "def shrink(blob): return zlib.compress(blob)"),
        ("docs/cipher.md", "How the cipher is configured."),
    ]
    index = LexicalIndex(docs)
    hits = index.search("which cipher can encrypt", limit=5)
    assert [h.row for h in hits][:1] == [0] and {h.row for h in hits} == {0, 2}
    assert [h.row for h in index.search("zlib", limit=5)] == [1]
    assert [h.row for h in index.search("cipher", limit=5, allowed=[False, True, True])] == [2]
    assert index.search("nothing matches this", limit=5) == []
    assert LexicalIndex([]).search("cipher") == []


def test_reciprocal_rank_fusion_rewards_agreement_and_honours_weights():
    fused = fuse([["a", "b", "c"], ["c", "d"]], [1.0, 1.0], k=60)
    assert [key for key, _ in fused] == ["c", "a", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 63 + 1 / 61)
    lexical_heavy = fuse([["a", "b"], ["b", "x"]], [0.1, 1.0], k=60)
    assert [key for key, _ in lexical_heavy][:2] == ["b", "x"]
    with pytest.raises(ValueError, match="weights"):
        fuse([["a"]], [1.0, 2.0])


SOURCE = '''"""A module."""

import zlib


class Vault:
    """Keeps secrets."""

    def lock(self, data):
        first = zlib.compress(data)
        second = first[::-1]
        third = second + b"0" * 40
        return third

    def unlock(self, data):
        first = data[:-40]
        second = first[::-1]
        return zlib.decompress(second)


def helper():
    return 1
'''


def test_headers_name_the_enclosing_class_and_function_of_a_chunk():
    chunks = with_headers(chunk_text("pkg/vault.py", SOURCE, size=120, overlap=0), SOURCE)
    by_line = {c.start_line: c.header for c in chunks}
    assert by_line[1] == ""  # the module docstring: nothing encloses it
    assert any(h == "class Vault > def unlock" for h in by_line.values())
    assert any(h == "def helper" for h in by_line.values())
    unlock = next(c for c in chunks if c.header == "class Vault > def unlock")
    assert "Vault" not in unlock.text  # the header says what the body does not
    assert with_headers(chunk_text("notes.md", "# Vault\n\ntext\n"), "# Vault\n\ntext\n")[0].header == ""
    broken = "def f(:\n    pass\n"
    assert with_headers(chunk_text("bad.py", broken), broken)[0].header == ""
