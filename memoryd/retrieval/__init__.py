"""Ranked retrieval: text rules, the in-memory corpus, vectors, the pipeline, recall."""
