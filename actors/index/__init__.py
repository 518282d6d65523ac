"""The repository index shared by the research and code-question workloads: one chunker,
one embedding path (the Registry's embedders), one Qdrant layer, and a lexical (BM25) view
of the same chunks that the hybrid search fuses with the vectors (`actors.index.hybrid`)."""
