"""Embedders: the offline MiniLM default (real model, no network) and the OpenAI-compatible one."""

from __future__ import annotations

import json
import math
import pickle
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from actors.runtime.embeddings import MiniLMEmbedder, OpenAIEmbedder, minilm_model_dir
from actors.runtime.llm.types import LlmError
from actors.runtime.registry import Registry


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_minilm_is_registered_and_found_offline() -> None:
    assert Registry._embedders["minilm"] is MiniLMEmbedder
    assert Registry._embedders["openai"] is OpenAIEmbedder
    assert (minilm_model_dir() / "model.safetensors").is_file()


def test_minilm_dimension_and_meaning(minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = [
        "The event store appends events with an expected version.",
        "Events are appended to the store, checking the expected stream version.",
        "My grandmother grows tomatoes in her garden every summer.",
    ]
    vectors = minilm.embed(texts)
    assert minilm.dim == 384 and [len(v) for v in vectors] == [384, 384, 384]
    anchor, paraphrase, unrelated = vectors
    assert cosine(anchor, paraphrase) > 0.6
    assert cosine(anchor, paraphrase) > cosine(anchor, unrelated) + 0.3
    assert abs(math.sqrt(sum(x * x for x in anchor)) - 1) < 1e-4  # normalised
    assert minilm.embed([]) == []


def test_minilm_batches_agree_with_single_calls(minilm: MiniLMEmbedder) -> None:
    texts = [f"chunk number {i} of the repository index" for i in range(5)]
    batched = MiniLMEmbedder(batch_size=2)
    batched._model = minilm.model  # share the loaded weights
    for one, many in zip([minilm.embed([t])[0] for t in texts], batched.embed(texts), strict=True):
        assert cosine(one, many) > 0.9999


def test_minilm_pickles_without_its_weights(minilm: MiniLMEmbedder) -> None:
    minilm.embed(["load it"])
    data = pickle.dumps(minilm)
    assert len(data) < 10_000
    assert len(pickle.loads(data).embed(["works on the other side"])[0]) == 384


class _Embeddings(BaseHTTPRequestHandler):
    calls: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(body)
        if body["model"] == "broken":
            status, payload = 400, {"error": {"message": "unknown model", "type": "invalid_request_error"}}
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(t)), float(i), 1.0]}
                for i, t in enumerate(body["input"])
            ]
            status, payload = 200, {"object": "list", "data": data[::-1], "model": body["model"],
                                    "usage": {"prompt_tokens": 1, "total_tokens": 1}}  # fmt: skip
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


def test_openai_embedder_batches_and_keeps_order() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        _Embeddings.calls.clear()
        embedder = OpenAIEmbedder(base_url=url, model="emb", batch_size=2)
        vectors = embedder.embed(["a", "bb", "ccc"])
        assert vectors == [[1.0, 0.0, 1.0], [2.0, 1.0, 1.0], [3.0, 0.0, 1.0]]
        assert [c["input"] for c in _Embeddings.calls] == [["a", "bb"], ["ccc"]]
        assert pickle.loads(pickle.dumps(embedder)).dim == 3
        with pytest.raises(LlmError) as info:
            OpenAIEmbedder(base_url=url, model="broken", max_retries=0).embed(["x"])
        assert info.value.reason == "bad_request"
    finally:
        server.shutdown()
        server.server_close()
