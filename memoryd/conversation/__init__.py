"""Conversation memory: what the daemon learns from what is said.

Pure functions, no I/O: cleaning and the relevance gate (`text`, `gate`), importance
and type routing (`signals`), facts and their reconciliation with what is known
(`facts`, `reconcile`), summaries (`summary`), the LLM tasks (`tasks`) and the last
turns of each session (`ring`). `engine/conversation.py` puts them to work.
"""
