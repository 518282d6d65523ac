"""The repository index shared by the research and code-question workloads: one chunker,
one embedding path (the Registry's embedders), one Qdrant layer."""
