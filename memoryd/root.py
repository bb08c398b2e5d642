"""Where the memory lives: `--root`, else $MEMORY_HOME, else ~/.memory (defined once, in
the stdlib-only client package, which memoryctl shares)."""

from memoryd_client.paths import resolve_root

__all__ = ["resolve_root"]
