"""JSON-RPC 2.0 messages: decode a request in two stages, encode replies.

Stage one decodes the envelope (so the `id` survives bad params), stage two the
params against the method's Struct; each failure maps to exactly one code.
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from memoryd.errors import InvalidParams, InvalidRequest, ParseError, RpcError

T = TypeVar("T")
RequestId = int | str | None


class Request(msgspec.Struct):
    method: str
    jsonrpc: Literal["2.0"] | UnsetType = UNSET  # a client may leave it out
    params: Raw | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET  # UNSET: a notification, never answered

    @property
    def is_notification(self) -> bool:
        return self.id is UNSET

    @property
    def reply_id(self) -> RequestId:
        return None if self.id is UNSET else self.id


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: Any = None


class Response(msgspec.Struct):
    jsonrpc: str = "2.0"
    id: RequestId = None
    result: Any = UNSET
    error: ErrorObject | UnsetType = UNSET


class Notification(msgspec.Struct):
    method: str
    params: Any
    jsonrpc: str = "2.0"


_request_decoder = msgspec.json.Decoder(Request)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
# msgspec raises these for input it cannot represent: nesting deeper than it
# recurses (RecursionError) and invalid UTF-8 inside a string (checked lazily, when
# a string is decoded). Both mean the line is not (valid) JSON: -32700, that line only.
_UNDECODABLE = (RecursionError, UnicodeDecodeError)
_FIELD = re.compile(r"at `\$\.([^`\[]+)|(?:missing required|unknown) field `([^`]+)`")


def decode_request(line: bytes) -> Request:
    stripped = line.lstrip()
    if stripped[:1] == b"[":
        raise InvalidRequest("batch requests are not supported: send one JSON object per line")
    try:
        request = _request_decoder.decode(line)
    except msgspec.ValidationError as exc:  # valid JSON, not a request object
        raise InvalidRequest(f"Invalid Request: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ParseError(f"Parse error: {exc}") from None
    except _UNDECODABLE as exc:
        raise ParseError(f"Parse error: {_undecodable(exc)}") from None
    return request


def _undecodable(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    return "invalid UTF-8 in a string"


def best_effort_id(line: bytes) -> RequestId:
    try:
        obj = _any_decoder.decode(line)
    except (msgspec.DecodeError, *_UNDECODABLE):
        return None
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, int | str) and not isinstance(rid, bool):
            return rid
    return None


def decode_params(raw: Raw | UnsetType, params_type: type[T], prefix: str = "params") -> T:
    """Decode `raw` into `params_type`; errors name the field as `params.<field>`."""
    data = b"{}" if raw is UNSET else bytes(raw)
    try:
        return msgspec.json.decode(data, type=params_type)
    except _UNDECODABLE as exc:
        raise ParseError(f"Parse error: {_undecodable(exc)} in `{prefix}`") from None
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _FIELD.search(text)
        field = (match.group(1) or match.group(2)) if match else ""
        problem = text.split(" - at ")[0]
        if text.startswith("Expected `object`"):
            problem = f"{prefix} must be a JSON object"
        raise InvalidParams(field or None, problem, prefix) from None


def encode_result(rid: RequestId, result: Any) -> bytes:
    return encode_json(Response(id=rid, result=result)) + b"\n"


def encode_error(rid: RequestId, error: RpcError) -> bytes:
    obj = ErrorObject(code=error.code, message=error.message, data=error.data)
    return encode_json(Response(id=rid, error=obj)) + b"\n"


def encode_notification(method: str, params: Any) -> bytes:
    return encode_json(Notification(method=method, params=params)) + b"\n"


def encode_json(obj: Any) -> bytes:
    """`obj` as JSON. A file name that is not UTF-8 (a sync or a hand brought it; Python
    holds its bytes as lone surrogates) is no JSON string: such text is sent with those
    characters escaped (`\\udcff`) rather than failing the reply, and the connection."""
    try:
        return _encoder.encode(obj)
    except UnicodeEncodeError:
        return _encoder.encode(_escaped(msgspec.to_builtins(obj)))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value
