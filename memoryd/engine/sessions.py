"""Sessions belong to a scope: the scope of a session's first memory owns it.

A conversation's turns, the facts learned from them and its rolling summary are one
scope's. Were another scope's memories let in, an agent could add turns to another
agent's [RECENT] block, or have its own facts folded into that agent's private summary.
Checked in the writer's thread (the catalog's writer connection), so two first writes
into a new session cannot both claim it.
"""

from __future__ import annotations

from memoryd.errors import Forbidden, RpcError
from memoryd.store.catalog import Catalog


def foreign_session(catalog: Catalog, session: str | None, scope: str,
                    claimed: dict[str, str]) -> RpcError | None:
    """The error for a memory of `scope` in a session another scope owns, else None (and
    the session is claimed for `scope` in `claimed`, the sessions this unit placed so
    far). The owner is not named: it may be a scope the caller cannot see."""
    if session is None:
        return None
    owner = claimed.get(session) or catalog.writer.session_scope(session)
    if owner is not None and owner != scope:
        return Forbidden(f"session {session!r} belongs to another scope; a session holds "
                         "one scope's memories: name another session")
    claimed[session] = scope
    return None
