from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.protocol.framing import LINE_TOO_LONG, LineFramer


def test_lines_split_across_chunks():
    f = LineFramer()
    assert f.feed(b'{"a":') == []
    assert f.feed(b'1}\n{"b"') == [b'{"a":1}']
    assert f.feed(b":2}\r\n\n  \n") == [b'{"b":2}']


def test_oversized_line_is_reported_once_and_skipped_to_its_newline():
    f = LineFramer(max_line=10)
    assert f.feed(b"x" * 8) == []
    assert f.feed(b"x" * 8) == [LINE_TOO_LONG]
    assert f.feed(b"y" * 100) == []
    assert f.feed(b"zz\nok\n") == [b"ok"]
    assert f.feed(b"a" * 11 + b"\nfine\n") == [LINE_TOO_LONG, b"fine"]
    assert f.buffered == 0


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       st.integers(min_value=1, max_value=17))
def test_any_chunking_yields_the_same_lines(lines, chunk):
    data = b"".join(line + b"\n" for line in lines)
    f = LineFramer(max_line=30)
    out = []
    for i in range(0, len(data), chunk):
        out.extend(f.feed(data[i:i + chunk]))
    expected = [LINE_TOO_LONG if len(line) > 30 else line.rstrip(b"\r")
                for line in lines if len(line) > 30 or line.rstrip(b"\r").strip()]
    assert out == expected
