"""The builder/verifier relay (seed 004): a roadmap worked through in turns. A builder
passes a BatonPacket to a verifier; the scheduler stores a checkpoint, retries with the
DefectCapsule, or escalates to a person."""
