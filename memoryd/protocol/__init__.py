"""The wire: NDJSON framing, the JSON-RPC codec and the dispatcher (no sockets here)."""
