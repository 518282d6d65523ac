"""Simulation sessions over HTTP (seed 002's control plane), mounted at `/v1/sessions`.

A session is a simulation run (`chorus sim new`); this router drives it with the same kernel
(`DirectorShell` in this process, as `chorus sim step --in-process`). Three lanes:

- query (GET, scope `read`, never mutates): the session, its overview (`chorus sim show`),
  resolve a name to ids, one object, its events (JSON and SSE), what changed since a
  position or a cycle, the cycle reports, the committed patches;
- turns (`POST .../turns`, scope `operate`): the text becomes a stimulus, perceived by the
  synths through perception, and one director cycle runs with its rollback semantics;
  control (create, steps, pause, resume, restore) is `operate` too;
- admin patches (`POST .../patches`, scope `admin`): typed operations applied to a working
  copy and checked against the invariants (`actors.simulation.patches`); `dry_run` writes
  nothing, `commit` appends them as one transaction ending in a `PatchCommitted` that names
  the principal, `commit_and_step` then runs a cycle. Stimuli without a cycle and the synths'
  inner monologues are `admin` as well.

What the query lane shows of the synths' minds goes through the principal's view
(actors.api.visibility): below admin, a synth's beliefs, memories, mental models, projects,
cognitions and LLM calls are redacted on every route (objects, events, the stream). A pack
is a bundled one, one in a folder the server allows by name (CHORUS_API_PACK_DIRS), or YAML
text (bounded: actors.simulation.loader). Ids in the path are refused in one line when
malformed (`SessionId`, `Ref`).

Sessions start paused (`resume` runs cycles in the background until `pause`). Restoring a
cycle starts a new lineage: a new session whose run names its parent; the parent is untouched.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import StreamingResponse

from actors.api.auth import Principal, require
from actors.api.errors import BAD_INPUT, COMMON_ERRORS, ERROR, UNAVAILABLE
from actors.api.live import LiveLog, page_reader, stream_run
from actors.api.places import PlaceRefused, confine
from actors.api.schemas import ID_PATTERN, REF_PATTERN, EventsPage, sse_frame
from actors.api.services import Services, acting_as, services
from actors.simulation.api_live import SessionManager
from actors.simulation.api_models import (
    Changes,
    CreateSession,
    CycleReport,
    CycleReports,
    CycleResult,
    Match,
    Monologue,
    Monologues,
    ObjectDetail,
    Overview,
    PatchList,
    PatchRecord,
    PatchRequest,
    PatchResult,
    Resolved,
    Restore,
    Resume,
    SessionInfo,
    SessionList,
    StepResults,
    Steps,
    Stimulus,
    StimulusQueuedResult,
    Turn,
    TurnResult,
    ViolationOut,
)
from actors.api.visibility import View
from actors.runtime.client import new_run_id
from actors.simulation import patches
from actors.simulation.client import KIND, create_session
from actors.simulation.director import DirectorConfig, DirectorState, evolve_director
from actors.simulation.fork import fork_session
from actors.simulation.loader import PackError, compile_pack, load_pack
from actors.simulation.overview import overview
from actors.simulation.progress import cycle_summary
from actors.simulation.session import Canonical, UnknownSession
from actors.simulation.streams import director_stream, synth_stream, world_stream
from actors.simulation.world import World, apply
from actors.simulation.events import (
    CycleCommitted,
    CycleRolledBack,
    PatchCommitted,
    SynthCognized,
    WorldCreated,
)
from events.store import ConcurrencyError

MAX_POSITION = 2**62  # positions are SQLite / PostgreSQL 64-bit integers: a larger one names nothing
PACKS = Path(__file__).resolve().parents[1] / "simulation" / "packs"
PACK_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SESSION_ERRORS: dict[int | str, dict[str, Any]] = {**COMMON_ERRORS, 404: {**ERROR, "description": "no such session"}}
CHANGE_ERRORS: dict[int | str, dict[str, Any]] = {
    **SESSION_ERRORS, **BAD_INPUT, **UNAVAILABLE,
    409: {**ERROR, "description": "the session moved on meanwhile (another writer): try again"},
}  # fmt: skip

SessionId = Annotated[str, PathParam(pattern=ID_PATTERN, description="a session id")]
Ref = Annotated[str, PathParam(pattern=REF_PATTERN, description="an id or a name")]
Read = Annotated[Principal, Depends(require("read"))]
Operate = Annotated[Principal, Depends(require("operate"))]
Admin = Annotated[Principal, Depends(require("admin"))]


def manager(request: Request) -> SessionManager:
    svc = services(request)
    found = getattr(request.app.state, "chorus_sessions", None)
    if found is None:
        with svc.lock:
            found = getattr(request.app.state, "chorus_sessions", None)
            if found is None:
                found = request.app.state.chorus_sessions = SessionManager(svc.client)
    return found


Svc = Annotated[Services, Depends(services)]
Sessions = Annotated[SessionManager, Depends(manager)]


def build_router() -> APIRouter:
    router = APIRouter(tags=["sessions"])

    # -- sessions -----------------------------------------------------------------------------

    @router.post("", status_code=201, response_model=SessionInfo, responses={**COMMON_ERRORS, **BAD_INPUT})
    def create(body: CreateSession, svc: Svc, sessions: Sessions, who: Operate) -> SessionInfo:
        """A new session from a bundled content pack (by name) or a pack's YAML; it starts paused."""
        if (body.pack is None) == (body.pack_yaml is None):
            raise HTTPException(400, "give exactly one of pack (a bundled pack's name) or pack_yaml")
        try:
            if body.pack is not None:
                allowed = (PACKS, *(svc.config.places.get("packs", ()) if svc.config else ()))
                try:
                    if not PACK_NAME.match(body.pack):
                        raise PlaceRefused(body.pack)
                    path = Path(confine(body.pack, allowed, "packs", "pack"))
                except PlaceRefused:
                    known = ", ".join(sorted(p.stem for p in PACKS.glob("*.yaml")))
                    raise HTTPException(400, f"no content pack {body.pack[:64]!r} (bundled: {known}; or one in CHORUS_API_PACK_DIRS)") from None
                source, pack = str(path), load_pack(path)
            else:
                source, pack = "<request>", compile_pack(body.pack_yaml or "", "<request>")
        except PackError as e:
            raise HTTPException(400, f"the content pack has {len(e.problems)} problem(s); the first: {e.problems[0]}") from e
        config = DirectorConfig(max_microcycles=body.max_microcycles, perception_policy=body.perception_policy)
        llm_params = {"temperature": body.temperature} if body.temperature is not None else None
        with acting_as(who.name):
            run_id = create_session(svc.client, source, run_id=new_run_id(), config=config, pack=pack, llm_params=llm_params)
        return _info(svc, sessions, run_id)

    @router.get("", response_model=SessionList, responses=COMMON_ERRORS)
    def list_sessions(
        svc: Svc, sessions: Sessions, _: Read,
        limit: Annotated[int, Query(ge=1, le=500)] = 50, offset: Annotated[int, Query(ge=0)] = 0,
    ) -> SessionList:  # fmt: skip
        """Simulation sessions, newest first."""
        rows = [r for r in svc.client.runs() if r["kind"] == KIND]
        found = []
        for r in rows[offset : offset + limit]:
            try:
                found.append(_info(svc, sessions, r["run_id"]))
            except UnknownSession:  # a run whose creation never recorded its world: not a session
                continue
        return SessionList(sessions=found, total=len(rows))

    @router.get("/{session_id}", response_model=SessionInfo, responses=SESSION_ERRORS)
    def get(session_id: SessionId, svc: Svc, sessions: Sessions, _: Read) -> SessionInfo:
        return _info(svc, sessions, session_id)

    # -- query lane ---------------------------------------------------------------------------

    @router.get("/{session_id}/overview", response_model=Overview, responses={**SESSION_ERRORS, **BAD_INPUT})
    def get_overview(
        session_id: SessionId, svc: Svc, _: Read,
        at: Annotated[int | None, Query(ge=0, le=MAX_POSITION, description="after this cycle (default: now)")] = None,
    ) -> Any:  # fmt: skip
        """Who is where, what they carry, what is in each place, processes and the clock (`chorus sim show`)."""
        return overview(svc.store, session_id, at=at)

    @router.get("/{session_id}/resolve", response_model=Resolved, responses=SESSION_ERRORS)
    def resolve(session_id: SessionId, svc: Svc, _: Read, name: Annotated[str, Query(min_length=1, max_length=200)]) -> Resolved:
        """Everything a name (or an id) refers to: entities, locations, synths, processes."""
        c = Canonical.load(svc.store, session_id)
        return Resolved(name=name, matches=_matches(c, name))

    @router.get("/{session_id}/objects/{ref}", response_model=ObjectDetail, responses={**SESSION_ERRORS, **BAD_INPUT})
    def get_object(session_id: SessionId, ref: Ref, svc: Svc, who: Read) -> ObjectDetail:
        """One entity, location, synth (its mind) or process, by id or unique name."""
        c = Canonical.load(svc.store, session_id)
        found = _matches(c, ref)
        if not found:
            raise HTTPException(404, f"session {session_id} has no object {ref!r}")
        if len({(m.kind, m.id) for m in found}) > 1 and not all(m.kind in ("entity", "synth") and m.id == found[0].id for m in found):
            raise HTTPException(400, f"{ref!r} is ambiguous: " + ", ".join(f"{m.kind} {m.id}" for m in found))
        m = next((m for m in found if m.kind == "synth"), found[0])
        if m.kind == "synth":
            data = View.of(who).state(synth_stream(session_id, m.id), c.synths[m.id].model_dump(mode="json"))
            data["body"] = c.world.entities[m.id].model_dump(mode="json")
        elif m.kind == "entity":
            data = c.world.entities[m.id].model_dump(mode="json")
        elif m.kind == "location":
            data = c.world.locations[m.id].model_dump(mode="json")
        else:
            data = c.world.processes[m.id].model_dump(mode="json")
        return ObjectDetail(kind=m.kind, id=m.id, name=m.name, data=data)

    @router.get("/{session_id}/events", response_model=EventsPage, responses=SESSION_ERRORS)
    def events(
        session_id: SessionId, svc: Svc, who: Read,
        after: Annotated[int, Query(ge=0, le=MAX_POSITION, description="global position: events after it")] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> Any:  # fmt: skip
        """The session's events (every stream of it) in log order, as `GET /v1/runs/{id}/events`."""
        _created(svc, session_id)
        page, view = [], View.of(who)
        for rec in svc.store.read_all(after + 1, run_id=session_id):
            page.append(view.event(rec))
            if len(page) >= limit:
                break
        return {"events": page, "last_position": page[-1]["position"] if page else after}

    @router.get(
        "/{session_id}/events/stream",
        response_class=StreamingResponse,
        responses={**SESSION_ERRORS, 200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"}},
    )
    def stream(
        session_id: SessionId, svc: Svc, who: Read,
        after: Annotated[int | None, Query(ge=0, le=MAX_POSITION, description="global position to resume after")] = None,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> StreamingResponse:  # fmt: skip
        """The session's events as Server-Sent Events (`id:` the global position; reconnect with
        `Last-Event-ID` to resume with no gap and no duplicate)."""
        _created(svc, session_id)
        start = after if after is not None else _position(last_event_id)
        with svc.lock:
            if svc.live is None:
                svc.live = LiveLog(svc.store, sse_frame)
            live = svc.live
        view = View.of(who)
        body = stream_run(live, session_id, start, page_reader(svc.store, session_id, view.frame), frame=view.frame, view=view.key)
        return StreamingResponse(body, media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @router.get("/{session_id}/changes", response_model=Changes, responses={**SESSION_ERRORS, **BAD_INPUT})
    def changes(
        session_id: SessionId, svc: Svc, _: Read,
        since: Annotated[int | None, Query(ge=0, le=MAX_POSITION, description="a global position (a cursor from events)")] = None,
        since_cycle: Annotated[int | None, Query(ge=0, le=MAX_POSITION, description="the end of this cycle (0: the start)")] = None,
    ) -> Changes:  # fmt: skip
        """What changed in the world since a position or the end of a cycle: field by field."""
        if (since is None) == (since_cycle is None):
            raise HTTPException(400, "give exactly one of since (a position) or since_cycle")
        records = list(svc.store.read_all(run_id=session_id))
        ws, ds = world_stream(session_id), director_stream(session_id)
        created = next((r for r in records if r.event.stream_id == ws and isinstance(r.event, WorldCreated)), None)
        if created is None:
            raise UnknownSession(f"no simulation session {session_id!r}")
        if since_cycle is not None:
            verdicts = [r.position for r in records if r.event.stream_id == ds and isinstance(r.event, CycleCommitted | CycleRolledBack)]
            if since_cycle > len(verdicts):
                raise HTTPException(400, f"session {session_id} has run {len(verdicts)} cycle(s); there is no cycle {since_cycle}")
            since = verdicts[since_cycle - 1] if since_cycle else created.position
        assert since is not None
        before = World.model_validate(created.event.world)
        now = World.model_validate(created.event.world)
        for r in records:
            if r.event.stream_id == ws:
                if r.position <= since:
                    apply(before, r.event)
                apply(now, r.event)
        until = records[-1].position
        return Changes(since_position=since, until_position=until, changes=patches.diff_worlds(before, now))

    @router.get("/{session_id}/reports", response_model=CycleReports, responses=SESSION_ERRORS)
    def reports(
        session_id: SessionId, svc: Svc, _: Read,
        after_cycle: Annotated[int, Query(ge=0, le=MAX_POSITION)] = 0, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> CycleReports:  # fmt: skip
        """Each cycle's verdict: committed (outcomes, microcycles, stimuli delivered) or rolled back (why)."""
        _created(svc, session_id)
        out: list[CycleReport] = []
        ds = director_stream(session_id)
        for r in svc.store.read_all(run_id=session_id, types=["CycleCommitted", "CycleRolledBack"]):
            e = r.event
            if e.stream_id != ds or e.cycle <= after_cycle:  # type: ignore[attr-defined]
                continue
            if isinstance(e, CycleCommitted):
                out.append(CycleReport(position=r.position, cycle=e.cycle, committed=True, tick=e.tick, microcycles=e.microcycles,
                                       quiescent=e.quiescent, outcomes=e.outcomes, stimuli=e.stimuli))  # fmt: skip
            elif isinstance(e, CycleRolledBack):
                out.append(CycleReport(position=r.position, cycle=e.cycle, committed=False, invariant=e.invariant, message=e.message))
            if len(out) >= limit:
                break
        return CycleReports(reports=out)

    @router.get("/{session_id}/patches", response_model=PatchList, responses=SESSION_ERRORS)
    def list_patches(session_id: SessionId, svc: Svc, _: Read) -> PatchList:
        """The admin patches committed to the session, each with who applied it."""
        _created(svc, session_id)
        found = [
            PatchRecord(position=r.position, patch_id=e.patch_id, principal=e.principal, note=e.note,
                        operations=e.operations, timestamp=e.timestamp.isoformat())  # fmt: skip
            for r in svc.store.read_all(run_id=session_id, types=["PatchCommitted"])
            if isinstance(e := r.event, PatchCommitted)
        ]
        return PatchList(patches=found)

    # -- control and the turn lane ------------------------------------------------------------

    @router.post("/{session_id}/turns", response_model=TurnResult, responses=CHANGE_ERRORS)
    def turn(session_id: SessionId, body: Turn, sessions: Sessions, who: Operate) -> TurnResult:
        """External input: queued as a stimulus the synths perceive, then one director cycle
        (it commits, or rolls back and changes nothing of the world)."""
        with _writing(), sessions.shell(session_id) as shell:
            queued = shell.stimulus(body.text, body.source, who.name)
            (result,) = shell.step(1)
        return TurnResult(stimulus_id=queued.event.stimulus_id, position=queued.position, result=CycleResult(**cycle_summary(result)))  # type: ignore[attr-defined]

    @router.post("/{session_id}/steps", response_model=StepResults, responses=CHANGE_ERRORS)
    def steps(session_id: SessionId, sessions: Sessions, _: Operate, body: Steps | None = None) -> StepResults:
        """Run director cycles now (each commits or rolls back as one transaction)."""
        cycles = body.cycles if body is not None else 1
        with _writing(), sessions.shell(session_id) as shell:
            results = shell.step(cycles)
        return StepResults(cycles=[CycleResult(**cycle_summary(r)) for r in results])

    @router.post("/{session_id}/resume", response_model=SessionInfo, responses=SESSION_ERRORS)
    def resume(session_id: SessionId, svc: Svc, sessions: Sessions, _: Operate, body: Resume | None = None) -> SessionInfo:
        """Run cycles in the background (up to `cycles`) until paused."""
        _simulation(svc, session_id)
        sessions.resume(session_id, (body or Resume()).cycles)
        return _info(svc, sessions, session_id)

    @router.post("/{session_id}/pause", response_model=SessionInfo, responses=SESSION_ERRORS)
    def pause(session_id: SessionId, svc: Svc, sessions: Sessions, _: Operate) -> SessionInfo:
        """Stop background running after the cycle in flight."""
        _simulation(svc, session_id)
        sessions.pause(session_id)
        return _info(svc, sessions, session_id)

    @router.post("/{session_id}/restore", status_code=201, response_model=SessionInfo, responses={**SESSION_ERRORS, **BAD_INPUT})
    def restore(session_id: SessionId, body: Restore, svc: Svc, sessions: Sessions, who: Operate) -> SessionInfo:
        """A new lineage from the end of a cycle: a new session that shares the history up to
        it and names this one as its parent. This session is not changed."""
        _simulation(svc, session_id)
        with acting_as(who.name):
            new = fork_session(svc.client, session_id, body.cycle, new_run_id())
        return _info(svc, sessions, new)

    # -- the admin lane -----------------------------------------------------------------------

    @router.post("/{session_id}/patches", response_model=PatchResult, responses=CHANGE_ERRORS)
    def patch(session_id: SessionId, body: PatchRequest, sessions: Sessions, who: Admin) -> PatchResult:
        """Typed operations on a working copy, checked against the invariants. `dry_run` writes
        nothing; `commit` appends the patch (naming the principal) when it is valid;
        `commit_and_step` then runs one cycle. An invalid patch is answered 200 with
        `valid: false`, its violations, and nothing written."""
        with _writing(), sessions.shell(session_id) as shell:
            c = shell.canonical
            planned = patches.plan(c.world, c.synths, body.operations)
            out = PatchResult(
                mode=body.mode, valid=planned.valid, committed=False, principal=who.name,
                violations=[ViolationOut(invariant=v.name, message=v.message) for v in planned.violations],
                diff=planned.diff, operations=[op.model_dump(mode="json") for op in planned.operations],
            )  # fmt: skip
            if not planned.valid or body.mode == "dry_run":
                return out
            recorded = shell.commit_patch(planned, who.name, body.note)
            done = recorded[-1]
            out.committed, out.position, out.patch_id = True, done.position, done.event.patch_id  # type: ignore[attr-defined]
            if body.mode == "commit_and_step":
                (result,) = shell.step(1)
                out.result = CycleResult(**cycle_summary(result))
        return out

    @router.post("/{session_id}/stimuli", status_code=202, response_model=StimulusQueuedResult, responses=CHANGE_ERRORS)
    def stimulus(session_id: SessionId, body: Stimulus, sessions: Sessions, who: Admin) -> StimulusQueuedResult:
        """Queue a stimulus without running a cycle: the synths perceive it on the next one."""
        with _writing(), sessions.shell(session_id) as shell:
            queued = shell.stimulus(body.text, body.source, who.name)
        return StimulusQueuedResult(stimulus_id=queued.event.stimulus_id, position=queued.position)  # type: ignore[attr-defined]

    @router.get("/{session_id}/synths/{synth}/monologue", response_model=Monologues, responses=SESSION_ERRORS)
    def monologue(
        session_id: SessionId, synth: Ref, svc: Svc, _: Admin, limit: Annotated[int, Query(ge=1, le=500)] = 20
    ) -> Monologues:
        """A synth's inner monologues (react, interpret, deliberate, resolve), newest last."""
        c = Canonical.load(svc.store, session_id)
        found = patches.matches(c.world, c.synths, synth, "synth")
        if len(found) != 1:
            raise HTTPException(404, f"session {session_id} has no synth {synth!r}")
        sid, name = found[0]
        ss = synth_stream(session_id, sid)
        thoughts = [
            Monologue(position=r.position, cycle=e.cycle, microcycle=e.microcycle, intents=e.intents, error=e.error,
                      inner_monologue=(e.response or {}).get("inner_monologue"))  # fmt: skip
            for r in svc.store.read_all(run_id=session_id, types=["SynthCognized"])
            if isinstance(e := r.event, SynthCognized) and e.stream_id == ss
        ]
        return Monologues(synth_id=sid, name=name, monologues=thoughts[-limit:])

    return router


# -- helpers ------------------------------------------------------------------------------------


class _writing:
    """A write that met another writer's append: 409, nothing of it written."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        if isinstance(exc, ConcurrencyError):
            raise HTTPException(409, "the session moved on meanwhile (another writer appended to it): try again") from exc
        return False


def _created(svc: Services, session_id: str) -> WorldCreated:
    first = svc.store.read_stream(world_stream(session_id), 1, 1)
    if not first or not isinstance(first[0], WorldCreated):
        raise UnknownSession(f"no simulation session {session_id!r}")
    return first[0]


def _simulation(svc: Services, session_id: str) -> None:
    state = svc.client.run_state(session_id)
    if state.kind != KIND:
        raise UnknownSession(f"run {session_id} is not a simulation session")


def _position(last_event_id: str | None) -> int:
    if last_event_id is None or not last_event_id.strip():
        return 0
    try:
        return min(MAX_POSITION, max(0, int(last_event_id.strip())))
    except ValueError:
        raise HTTPException(400, f"Last-Event-ID must be a position (an integer), not {last_event_id[:40]!r}") from None


def _info(svc: Services, sessions: SessionManager, session_id: str) -> SessionInfo:
    created = _created(svc, session_id)
    run = svc.client.run_state(session_id)
    director = DirectorState()
    for e in svc.store.read_stream(director_stream(session_id)):
        director = evolve_director(director, e)
    live = sessions.known(session_id)
    return SessionInfo(
        session_id=session_id, pack=created.pack, status=run.status,
        state="running" if live is not None and live.running else "paused",
        cycle=director.cycle, tick=director.tick, committed=director.committed, rolled_back=director.rolled_back,
        pending_stimuli=len(director.pending), parent=run.forked_from, parent_cycle=run.params.get("forked_at_cycle"),
        error=live.error if live is not None else None,
    )  # fmt: skip


def _matches(c: Canonical, name: str) -> list[Match]:
    found: list[Match] = []
    for kind in ("synth", "entity", "location"):
        found += [Match(kind=kind, id=i, name=n) for i, n in patches.matches(c.world, c.synths, name, kind)]  # type: ignore[arg-type]
    key = " ".join(name.split()).casefold()
    found += [
        Match(kind="process", id=p.id, name=p.name)
        for p in c.world.processes.values()
        if p.id == name or " ".join(p.name.split()).casefold() == key
    ]
    return found


router = build_router()
