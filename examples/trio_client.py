"""memoryd from trio: one persistent connection, pipelined calls, and events.

memoryd_client's framing and message helpers are plain functions, so any event loop can
speak the protocol; this is the whole of it for trio (AsyncClient is for asyncio).

    python examples/trio_client.py "what do I know about Ann?"
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import trio

from memoryd_client import RpcFailure, resolve_socket
from memoryd_client.framing import LineFramer, LineTooLong
from memoryd_client.wire import is_notification, outcome, request_line


class TrioMemory:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ids = itertools.count(1)
        self.waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.events_in, self.events = trio.open_memory_channel[dict[str, Any]](100)
        self.sending = trio.Lock()  # one writer at a time on the stream

    async def read_forever(self) -> None:
        framer = LineFramer(max_line=1 << 30)
        while data := await self.stream.receive_some(65536):
            for line in framer.feed(data):
                if isinstance(line, LineTooLong):
                    continue
                message = json.loads(line)
                channel = self.waiting.pop(message.get("id"), None)
                if channel is not None:
                    await channel.send(message)
                elif is_notification(message):
                    await self.events_in.send(message)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        request_id = next(self.ids)
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self.waiting[request_id] = send
        async with self.sending:
            await self.stream.send_all(request_line(request_id, method, params))
        return outcome(await receive.receive())


async def main(question: str) -> None:
    stream = await trio.open_unix_socket(str(resolve_socket()))
    memory = TrioMemory(stream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(memory.read_forever)
        await memory.call("initialize", {"clientInfo": {"name": "trio-example"}})
        await memory.call("events/subscribe")
        async with trio.open_nursery() as calls:  # many calls in flight on one socket
            for fact in ("Ann prefers green tea", "Ann lives in Porto"):
                calls.start_soon(memory.call, "memory_write", {"content": fact})
        event = await memory.events.receive()
        print(f"event: {event['method']} {event['params']['event']}")
        try:
            recalled = await memory.call("memory_recall", {"query": question})
        except RpcFailure as exc:
            print(f"memoryd said: {exc.message}", file=sys.stderr)
        else:
            print(recalled["text"])
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main, " ".join(sys.argv[1:]) or "what do I know about Ann?")
