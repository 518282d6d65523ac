"""The world simulation (seed 002, "Singing Bird"): content pack -> ruleset -> kernel, a
director cycle that commits or rolls back as one transaction, and synths as event-sourced
Ray actors. The kernel (world, perception, resolver, statecharts, invariants) is pure.
    events.py              its event types (world, director and synth streams: streams.py)
    world.py, ruleset.py, loader.py, pack_models.py, perception.py, perception_policy.py,
    resolver.py, communication.py, processes.py, statechart.py, invariants.py, clock.py,
    director.py, cognition.py, synth.py, theory_of_mind.py, payloads.py, schemas.py,
    patches.py             the pure core: the kernel, the director cycle, a synth's mind
    prompts.py             a synth's prompts; packs/, the content packs
    actor.py, session.py   the Ray shells (`DirectorActor`, `SynthActor`) and a session's shell
    snapshot.py, overview.py   its views: full-system snapshots, a session at a cycle
    replay.py, fork.py     replay, fork at a cycle
    kind.py                its RunKind, `SimulationRun`; cli.py, `chorus sim`; client.py,
                           `simulate(client, pack)`; api.py (api_live.py, api_models.py), its
                           HTTP routes; progress.py
"""
