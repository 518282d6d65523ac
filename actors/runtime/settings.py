"""Configuration, read from the environment (and nothing else), as one pydantic model.

Settings travel to Ray actors as plain data, so every actor opens the same store and
talks to the same model as the client that started it.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from actors.runtime.placement import PlacementError, parse_placement

DEFAULT_MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


class ConfigError(Exception):
    """A setting is missing or contradicts another; the message says which and how to fix it."""


def check_data_dir(path: Path) -> None:
    """Refuse a data folder that cannot be one: an existing file, or a path under a file.
    A missing folder is fine (it is made on first use)."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                where = "is a file" if p == path else f"is under {p}, which is a file"
                raise ConfigError(f"CHORUS_DATA_DIR={path} {where}: point it at a folder")
            return


def _first_problem(e: ValidationError) -> str:
    errors = e.errors()
    if not errors:
        return str(e).splitlines()[0]
    first = errors[0]
    field = ".".join(str(part) for part in first.get("loc", ())) or "settings"
    given = repr(first.get("input"))
    return f"{field}: {first.get('msg', 'invalid')} (got {given[:80]}{'...' if len(given) > 80 else ''})"


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    data_dir: Path
    store_url: str
    llm_base_url: str | None = None  # None: start the embedded llama.cpp server
    llm_model: str = "qwen2.5-coder-1.5b-instruct"
    llm_api_key: str = "not-needed"
    llm_timeout_s: float = 300.0
    llm_max_retries: int = 3
    # "auto" tries json_schema then falls back to json_object; llama.cpp needs json_object.
    llm_structured: str = "auto"
    llm_port: int = 8765
    # The embedded server is shared by every process and stops after this long with no
    # request (CHORUS_LLM_IDLE_S); 0: each process's own server, stopped with it.
    llm_idle_s: float = 600.0
    llm_threads: int = 0  # CHORUS_LLM_THREADS: the local server's threads; 0: half the cores
    llm_context: int = 8192
    gguf_path: Path | None = None  # a user's own GGUF instead of the assembled default
    # Where the default model is assembled: shared by every data directory (CHORUS_MODEL_DIR,
    # from_env's default ~/.cache/chorus/models); None: data_dir/models.
    model_dir: Path | None = None
    embedder: str = "minilm"
    embeddings_base_url: str | None = None
    embeddings_model: str = "text-embedding-3-small"
    snapshot_every: int = 100
    qdrant_url: str | None = None  # None: Qdrant local mode in data_dir/qdrant
    # auto: a vector-store actor on a multi-node cluster, else local mode; or local | actor
    vectors: str = "auto"
    placement: str = ""  # CHORUS_PLACEMENT: where actors go on a cluster (actors.runtime.placement)
    # A Client with no Ray address joins the machine's shared local Ray head, which stops after
    # this long unused (CHORUS_RAY_IDLE_S; actors.runtime.ray_head); 0: a Ray of its own.
    ray_idle_s: float = 600.0
    ray_port: int = 6390  # CHORUS_RAY_PORT: the shared head's port on this machine

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        data_dir = Path(env.get("CHORUS_DATA_DIR") or Path.home() / ".chorus").expanduser()
        values: dict[str, object] = {
            "data_dir": data_dir,
            "store_url": env.get("CHORUS_STORE_URL") or f"sqlite:///{data_dir / 'chorus.db'}",
            "llm_base_url": env.get("CHORUS_LLM_BASE_URL") or env.get("OPENAI_BASE_URL") or None,
            "llm_api_key": env.get("CHORUS_LLM_API_KEY") or env.get("OPENAI_API_KEY") or "not-needed",
            "model_dir": Path(
                env.get("CHORUS_MODEL_DIR")
                or Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chorus" / "models"
            ).expanduser(),
        }
        if env.get("CHORUS_LLM_MODEL"):
            values["llm_model"] = env["CHORUS_LLM_MODEL"]
        for key, field in (
            ("CHORUS_LLM_TIMEOUT", "llm_timeout_s"),
            ("CHORUS_LLM_MAX_RETRIES", "llm_max_retries"),
            ("CHORUS_LLM_STRUCTURED", "llm_structured"),
            ("CHORUS_LLM_PORT", "llm_port"),
            ("CHORUS_LLM_IDLE_S", "llm_idle_s"),
            ("CHORUS_LLM_THREADS", "llm_threads"),
            ("CHORUS_LLM_CONTEXT", "llm_context"),
            ("CHORUS_GGUF", "gguf_path"),
            ("CHORUS_EMBEDDER", "embedder"),
            ("CHORUS_EMBEDDINGS_BASE_URL", "embeddings_base_url"),
            ("CHORUS_EMBEDDINGS_MODEL", "embeddings_model"),
            ("CHORUS_SNAPSHOT_EVERY", "snapshot_every"),
            ("CHORUS_QDRANT_URL", "qdrant_url"),
            ("CHORUS_VECTORS", "vectors"),
            ("CHORUS_PLACEMENT", "placement"),
            ("CHORUS_RAY_IDLE_S", "ray_idle_s"),
            ("CHORUS_RAY_PORT", "ray_port"),
        ):
            if env.get(key):
                values[field] = env[key]
        values.update(overrides)
        try:
            settings = cls.model_validate(values)
        except ValidationError as e:  # pydantic's message is long: name the setting and why
            raise ConfigError(f"invalid configuration: {_first_problem(e)}") from e
        check_data_dir(settings.data_dir)
        if settings.llm_structured not in ("auto", "json_schema", "json_object"):
            raise ConfigError(
                f"CHORUS_LLM_STRUCTURED={settings.llm_structured!r}: "
                "use auto, json_schema or json_object"
            )
        if settings.vectors not in ("auto", "local", "actor"):
            raise ConfigError(f"CHORUS_VECTORS={settings.vectors!r}: use auto, local or actor")
        try:
            parse_placement(settings.placement)
        except PlacementError as e:
            raise ConfigError(str(e)) from None
        return settings

    @property
    def model_path(self) -> Path:
        return self.gguf_path or (self.model_dir or self.data_dir / "models") / DEFAULT_MODEL_FILE

    @property
    def uses_embedded_llm(self) -> bool:
        return self.llm_base_url is None
