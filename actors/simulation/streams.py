"""A session's streams: the world, the director, and one per synth."""

from __future__ import annotations


def world_stream(run_id: str) -> str:
    return f"sim:{run_id}:world"


def director_stream(run_id: str) -> str:
    return f"sim:{run_id}:director"


def synth_stream(run_id: str, synth_id: str) -> str:
    return f"sim:{run_id}:synth:{synth_id}"


def is_synth_stream(stream_id: str) -> bool:
    return stream_id.startswith("sim:") and ":synth:" in stream_id


def synth_of(stream_id: str) -> str:
    return stream_id.rsplit(":synth:", 1)[1]
