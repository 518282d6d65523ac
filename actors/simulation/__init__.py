"""The world simulation (seed 002, "Singing Bird"): content pack -> ruleset -> kernel, a
director cycle that commits or rolls back as one transaction, and synths as event-sourced
Ray actors. The kernel (world, perception, resolver, statecharts, invariants) is pure."""
