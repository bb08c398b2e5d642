"""Conversation memory: what the daemon learns from what is said.

Pure functions, no I/O: the reconciliation of a new fact with what is known
(`reconcile`), summaries (`summary`), the LLM tasks (`tasks`) and the last turns of each
session (`ring`). What a turn says (its sentences, the gate, its weight, its facts and
their frames) is read by the language rules, `memoryd/lang/`. `engine/conversation.py`
puts them to work.
"""
