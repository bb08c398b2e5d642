"""Ingestion: notes and transcripts from where people keep them, read as untrusted
input. Each source (sources.py names them) reads a folder into Documents (notes) or
Turns (transcripts) plus what it skipped or failed, with reasons; it writes nothing.
The engine's Ingest collaborator (engine/ingest.py) stores what they read."""
