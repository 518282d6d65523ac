"""The Verifier (seed 004): one builder turn checked, as the scheduler's command.

It materializes the relay's workspace (`state.files`, the fold of the log) in a scratch
folder and runs its checks there: ruff, pylint where the workspace configures it, the test
suite, the configured domain probes (actors.relay.checks, each in the sandbox), each with the
Verifier's own configuration, never the workspace's. Each check
is a tool call through `effects`, recorded in the verifier's stream as ToolCalled /
ToolReturned before its result is read (output: the VerifierCheck and its findings as JSON),
so a replay serves the very results the live run saw. Then the LLM coherence check (does
the change meet the item's acceptance criteria?), recorded the same way, then the pure
verdict (actors.relay.verdict).

The builder writes the workspace, so it could write what configures the checks. A
conftest.py the current item's turns wrote or changed is left out of the copy pytest runs
in, and such a change (conftest.py, pytest or ruff settings, noqa comments) is a failed
check of its own, "check-config", unless the roadmap item allows it
(actors.relay.check_config). It is decided from the files alone, with no tool run.

A model call that fails leaves the coherence answer unreadable, which never passes a turn:
the verdict is RETRY at worst, and the builder tries again. The coherence check is asked
on every turn (`coherence="always"`, the default), only when the other checks passed
(`"when-checks-pass"`: a failed check fails the turn anyway, and the call's tokens are
saved), or never (`"off"`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from actors.relay import checks
from actors.relay.check_config import check_config_check, untrusted_conftests
from actors.relay.prompts import coherence_request, read_coherence
from actors.relay.sandbox import SandboxPolicy
from actors.relay.scheduler import RelayState, VerifierFinished, verifier_turn_id
from actors.relay.verdict import Coherence, decide_verdict
from actors.relay.workspace import diff_text
from actors.runtime.perform import ToolInvoker
from events.effects import LlmCompleted, LlmFailed, ToolReturned
from actors.relay.events import VerifierCheck

PROBE = "probe:"  # a probe's tool name is "probe:<name>"
CoherenceMode = Literal["always", "when-checks-pass", "off"]
COHERENCE_MODES: tuple[str, ...] = ("always", "when-checks-pass", "off")


class Verifier:
    def __init__(
        self,
        model: str = "",
        params: dict[str, Any] | None = None,
        *,
        probes: Mapping[str, Sequence[str]] | None = None,
        policy: SandboxPolicy | None = None,
        lint: bool = True,
        coherence: CoherenceMode = "always",
        ruff_select: Sequence[str] = checks.DEFAULT_RUFF_SELECT,
        ruff_ignore: Sequence[str] = (),
    ) -> None:
        if coherence not in COHERENCE_MODES:
            raise ValueError(f"coherence must be one of {', '.join(COHERENCE_MODES)}, not {coherence!r}")
        self.model = model
        self.params = dict(params or {})
        self.probes = {name: list(argv) for name, argv in (probes or {}).items()}
        self.policy = policy or SandboxPolicy()
        self.lint = lint
        self.coherence = coherence
        self.ruff_select, self.ruff_ignore = tuple(ruff_select), tuple(ruff_ignore)
        self._root: Path | None = None  # the scratch workspace of the turn being verified

    def invoker(self) -> ToolInvoker:
        """Runs a check on the workspace being verified, for `LiveEffects`."""

        def invoke(name: str, args: dict[str, Any]) -> str:
            if self._root is None:
                raise RuntimeError("no workspace is being verified")
            return json.dumps(self._run(name, args, self._root))

        return invoke

    def check_names(self, root: Path) -> list[str]:
        """The checks a turn gets, in order; decided by configuration and the files only."""
        names = ["ruff"] if self.lint else []
        if self.lint and checks.pylint_configured(root):
            names.append("pylint")
        names.append("pytest")
        return names + [PROBE + n for n in sorted(self.probes)]

    def verify(self, state: RelayState, effects: Any, before: Mapping[str, str] | None = None) -> VerifierFinished:
        """The verdict on the builder turn `state.last_turn_id`; `before` is the workspace
        before that turn (for the diff the coherence check reads)."""
        item, turn = state.item, state.last_turn_id
        if item is None or turn is None or state.status != "verifying":
            raise ValueError("the relay is not waiting for a verification")
        allowed = item.allow_check_config
        left_out = set() if allowed else set(untrusted_conftests(state.item_files, state.files))
        with tempfile.TemporaryDirectory(prefix="chorus-verify-") as tmp:
            root = Path(tmp)
            for path, text in state.files.items():
                if path in left_out:
                    continue
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            self._root = root
            try:
                results = [self._check(name, turn, effects) for name in self.check_names(root)]
            finally:
                self._root = None
        found = [c for c, _ in results]
        tampered = check_config_check(state.item_files, state.files, allowed=allowed)
        if tampered is not None:
            found.append(tampered)
        failing = [t for _, ts in results for t in ts]
        coherence, tokens = self._coherence(state, found, before, effects)
        status, report, capsule = decide_verdict(found, coherence, failing, defect_id=f"{turn}:defect")
        return VerifierFinished(
            key=f"verified:{state.turn_number}",
            turn_id=verifier_turn_id(state.task_id, state.turn_number),
            verified_turn_id=turn,
            status=status,
            report=report,
            checks=found,
            defect_capsule=capsule,
            tokens=tokens,
        )

    def _coherence(
        self, state: RelayState, found: list[VerifierCheck], before: Mapping[str, str] | None, effects: Any
    ) -> tuple[Coherence | None, int]:
        """The LLM coherence answer and its tokens; (None, 0) when this verifier does not ask
        (mode "off", or "when-checks-pass" after a check failed: the turn fails anyway)."""
        if self.coherence == "off" or (self.coherence == "when-checks-pass" and not all(c.passed for c in found)):
            return None, 0
        assert state.item is not None
        baton = state.batons[-1] if state.batons else ""
        diff = diff_text(dict(before or {}), state.files)
        request = coherence_request(state.item, baton, diff, self.model, self.params)
        outcome = effects.llm(request, state.turn_number)[-1]
        if isinstance(outcome, LlmCompleted):
            answer = read_coherence(outcome.parsed if outcome.parsed is not None else outcome.content)
            return answer, outcome.prompt_tokens + outcome.completion_tokens
        why = outcome.error.message if isinstance(outcome, LlmFailed) else "no answer"
        return (False, f"the coherence check's model call failed: {why}", []), 0

    def _check(self, name: str, turn: str, effects: Any) -> tuple[VerifierCheck, list[str]]:
        args: dict[str, Any] = {"turn_id": turn}
        if name.startswith(PROBE):
            args["argv"] = self.probes[name[len(PROBE) :]]
        returned = effects.tool(name, args, None)[-1]
        kind = "probe" if name.startswith(PROBE) else "test" if name == "pytest" else "lint"
        if not isinstance(returned, ToolReturned) or not returned.ok:
            output = returned.output if isinstance(returned, ToolReturned) else "no result"
            return VerifierCheck(
                name=name,
                kind=kind,
                passed=False,
                details=f"the check did not run: {output}",
            ), []
        data = json.loads(returned.output)
        return VerifierCheck.model_validate(data["check"]), list(data.get("failing_tests", []))

    def _run(self, name: str, args: dict[str, Any], root: Path) -> dict[str, Any]:
        failing: list[str] = []
        issues: list[dict[str, Any]] = []
        if name == "ruff":
            check, issues = checks.run_ruff(root, self.policy, select=self.ruff_select, ignore=self.ruff_ignore)
        elif name == "pylint":
            ran = checks.run_pylint(root, self.policy)
            if ran is None:
                raise ValueError("pylint is not configured in this workspace")
            check, issues = ran
        elif name == "pytest":
            check, failing = checks.run_pytest(root, self.policy)
        elif name.startswith(PROBE):
            check = checks.run_probe(name[len(PROBE) :], args["argv"], root, self.policy)
        else:
            raise ValueError(f"the verifier has no check {name!r}")
        return {
            "check": check.model_dump(mode="json"),
            "failing_tests": failing,
            "issues": issues[:20],
        }
