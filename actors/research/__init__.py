"""The research workload (seed 000): Researcher, RepositoryIndexer, RepositorySearcher."""
