"""memoryd: a local-first memory daemon for LLM agents.

Kept import-light on purpose: memoryctl imports `memoryd` (its version, the job
table), which must not drag trio, structlog or the stores in with it.
"""

__version__ = "0.1.0"
