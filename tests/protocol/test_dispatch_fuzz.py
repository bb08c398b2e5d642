"""Random bytes and random JSON at the dispatcher (over a real engine and store, with
a fake embedder and in-memory vectors: neither the model nor chromadb is loaded):
always a well-formed JSON-RPC reply (or none, for a notification), never a crash,
never an internal error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from memoryd.errors import ERROR_CODES, INTERNAL_ERROR
from memoryd.protocol.dispatch import Connection
from memoryd.tools.spec import SPECS
from tests.rig import Rig

FUZZ = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=4),
    max_leaves=12)
METHODS = [*SPECS, "initialize", "tools/list", "tools/call", "health", "stats", "ping",
           "events/subscribe", "events/unsubscribe", "notifications/initialized", "nope"]
FIELDS = ["id", "content", "query", "category", "tags", "scope", "limit", "offset", "source",
          "target", "add", "remove", "version", "from", "to", "name", "arguments", "role",
          "session", "importance", "created_at", "phase", "type", "clientInfo"]
requests = st.fixed_dictionaries(
    {"method": st.sampled_from(METHODS),
     "params": st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=5)},
    optional={"id": st.one_of(st.integers(), st.text(max_size=5), st.none()),
              "jsonrpc": st.sampled_from(["2.0", "1.0", 2])})


@pytest.fixture
async def dispatcher(tmp_path):
    rig = Rig(tmp_path)
    rig.engine.sync.progress.finish()  # no start-up here: the tools would say busy
    yield rig.dispatcher
    rig.close()


def check(reply: bytes | None, request: object = None) -> None:
    if reply is None:
        assert isinstance(request, dict) and "id" not in request
        return
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1
    obj = json.loads(reply)
    assert obj["jsonrpc"] == "2.0" and "id" in obj
    assert ("result" in obj) != ("error" in obj)
    if "error" in obj:
        assert obj["error"]["code"] in ERROR_CODES
        assert obj["error"]["code"] != INTERNAL_ERROR, obj
        assert obj["error"]["message"]


@FUZZ
@given(data=st.binary(max_size=300))
async def test_random_bytes(dispatcher, data):
    check(await dispatcher.handle(data, Connection()))


@FUZZ
@given(value=json_values)
async def test_random_json(dispatcher, value):
    check(await dispatcher.handle(json.dumps(value).encode(), Connection()), value)


@FUZZ
@given(request=requests)
async def test_random_requests(dispatcher, request):
    line = json.dumps(request).encode()
    with capture_logs() as logs:  # preparing a line never fails, whatever it holds
        dispatcher.prepare([line], Connection())
    assert [e for e in logs if e["log_level"] == "error"] == []
    check(await dispatcher.handle(line, Connection()), request)


def _deep(depth: int) -> bytes:
    return (b'{"id": "deep", "method": "memory_write", "params": {"content": "x", "tags": '
            + b"[" * depth + b"]" * depth + b"}}")


def _bad_utf8(junk: bytes) -> bytes:
    return b'{"id": "utf8", "method": "memory_write", "params": {"content": "a' + junk + b'z"}}'


hostile_lines = st.one_of(  # each answered with an error for that line only
    st.integers(min_value=2_000, max_value=20_000).map(_deep),
    st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80\x80"]
                    ).map(_bad_utf8),
    st.sampled_from([b"[" * 3000, b'{"a":' * 3000, b'{"id": 1, "method": "ping", "params": '
                     + b"[" * 5000]),
)
writes = st.integers(0, 999).map(lambda i: json.dumps(
    {"id": i, "method": "memory_write", "params": {"content": f"burst note {i}"}}).encode())


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(burst=st.lists(st.one_of(hostile_lines, writes), min_size=1, max_size=12))
async def test_pipelined_bursts_with_deep_nesting_and_invalid_utf8(dispatcher, burst):
    """Each line of a burst is answered on its own and in order: a hostile line gets
    -32700 (-32600 for a line that opens like a batch), the writes around it are stored
    and acknowledged."""
    with capture_logs() as logs:  # received while earlier lines run: prepared first
        dispatcher.prepare(burst, Connection())
    assert [e for e in logs if e["log_level"] == "error"] == []
    replies = await dispatcher.handle_many(burst, Connection())
    assert len(replies) == len(burst)
    for line, reply in zip(burst, replies, strict=True):
        check(reply, {"id": 0})
        obj = json.loads(reply)
        if b"burst note" in line:
            assert obj["id"] == json.loads(line)["id"] and "result" in obj, obj
        else:
            assert obj["error"]["code"] in (-32700, -32600), obj  # "[[[...": a batch
