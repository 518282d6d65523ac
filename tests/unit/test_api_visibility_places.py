"""The API's one redaction (actors.api.visibility), its confinement of places
(actors.api.places) and the content pack's YAML limits (actors.simulation.loader), pure."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.api.auth import Principal
from actors.api.places import ApiConfig, PlaceRefused, check_submission, confine
from actors.api.visibility import REDACTED, View, admin_only, redact
from actors.runtime.registry import Registry
from actors.simulation.kind import PACKS
from actors.simulation.loader import MAX_PACK_BYTES, PackError, compile_pack, load_pack

SYNTH = "sim:run1:synth:abc"


def test_redact_replaces_dotted_paths_and_leaves_the_input_alone():
    data = {"synth": {"beliefs": ["x"], "identity": {"name": "T"}}, "response": {"inner_monologue": "m"}}
    out = redact(data, ("synth.beliefs", "response", "nowhere.deep"))
    assert out == {"synth": {"beliefs": REDACTED, "identity": {"name": "T"}}, "response": REDACTED}
    assert data["response"] == {"inner_monologue": "m"}
    assert redact({"a": 1, "b": 2}, ("*",)) == {"a": REDACTED, "b": REDACTED}


def test_the_simulation_declares_its_synths_minds_admin_only_and_nothing_else():
    assert "response" in admin_only(SYNTH, "SynthCognized")
    assert admin_only(SYNTH, "LlmRequested") == ("messages",)
    assert set(admin_only(SYNTH, "LlmCompleted")) == {"content", "parsed"}
    assert admin_only(SYNTH, "SomethingNew") == ("*",)  # an event type nobody declared: hidden whole
    assert "memories" in admin_only(SYNTH, "state")
    assert admin_only("sim:run1:world", "WorldCreated") == ()
    assert admin_only("agent:run1", "LlmCompleted") == ()  # other workloads' calls: visible to read (documented)


def test_a_view_below_admin_redacts_and_admin_sees_all():
    data = {"cycle": 1, "response": {"inner_monologue": {"react": "secret"}}, "intents": []}
    read, admin = View.of(Principal(name="r", scope="read")), View.of(Principal(name="a", scope="admin"))
    assert read.data(SYNTH, "SynthCognized", data)["response"] == REDACTED
    assert read.data(SYNTH, "SynthCognized", data)["intents"] == []
    assert admin.data(SYNTH, "SynthCognized", data) == data
    assert View.of(Principal(name="o", scope="operate")).key == "redacted"


def test_confine_takes_only_paths_inside_the_roots(tmp_path):
    root = tmp_path / "packs"
    root.mkdir()
    (root / "mine.yaml").write_text("name: x\n")
    (root / "out.yaml").symlink_to("/etc/hostname")
    assert confine("mine", (root,), "packs", "goal") == str((root / "mine.yaml").resolve())
    assert confine(str(root / "mine.yaml"), (root,), "packs", "goal") == str((root / "mine.yaml").resolve())
    refusals = set()
    for bad in ("out", "../packs/../../etc/passwd", "/etc/passwd", "/etc", "nope", "", "a\x00b", "x" * 5000):
        with pytest.raises(PlaceRefused) as e:
            confine(bad, (root,), "packs", "goal")
        refusals.add(str(e.value).split("'", 2)[-1])  # the words after the value
    assert len(refusals) == 1


def test_check_submission_refuses_server_options_and_makes_a_workspace_per_run(tmp_path):
    relay = Registry.run_kind("relay")
    config = ApiConfig(places={"workspaces": (tmp_path / "ws",)}, server_options={"relay": {"resubmit": ["./hook"]}})
    with pytest.raises(PlaceRefused, match="resubmit"):
        check_submission(relay, "g", {"resubmit": ["sh"]}, config, "run1")
    _, options, made = check_submission(relay, "g", {}, config, "run1")
    assert Path(options["workspace"]) == tmp_path / "ws" / "run1" and made == [tmp_path / "ws" / "run1"]
    assert options["resubmit"] == ["./hook"]  # the server's own
    with pytest.raises(PlaceRefused):
        check_submission(relay, "g", {"workspace": str(tmp_path)}, config, "run2")


def test_the_bundled_packs_load_and_an_alias_or_an_oversized_pack_does_not(tmp_path):
    for pack in PACKS.glob("*.yaml"):
        load_pack(pack)
    with pytest.raises(PackError, match="aliases"):
        compile_pack("name: x\na: &a [1]\nb: *a\n", "x.yaml")
    with pytest.raises(PackError, match="aliases"):
        compile_pack("name: x\na: &a {k: 1}\nb: {<<: *a}\n", "x.yaml")
    with pytest.raises(PackError, match="larger than"):
        compile_pack("name: x\n#" + "y" * MAX_PACK_BYTES, "x.yaml")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"name: x\n#" + b"y" * MAX_PACK_BYTES)
    with pytest.raises(PackError, match="larger than"):
        load_pack(big)
