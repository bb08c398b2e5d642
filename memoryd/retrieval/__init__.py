"""Ranked retrieval: the in-memory corpus, vectors, the parsed query, the pipeline and its
stages, recall (the words it reads are lang/'s)."""
