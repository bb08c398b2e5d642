"""Models that ship inside PyPI packages: the embedder and the optional cross-encoder."""
