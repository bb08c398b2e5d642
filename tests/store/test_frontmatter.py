from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.schema import Memory, content_hash
from memoryd.store import frontmatter


def memory(**kw) -> Memory:
    return Memory(id="abc-1", **kw)


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1).filter(lambda s: s.strip() and "\x00" not in s))
def test_any_content_round_trips_after_stripping(content):
    m = memory(content=content.strip(), tags=["t"], extra={"mine": [1, "two"]})
    parsed = frontmatter.parse(frontmatter.render(m).decode(), "other")
    assert parsed.memory.content == content.strip()
    assert parsed.memory.id == "abc-1" and parsed.memory.extra == {"mine": [1, "two"]}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(
    lambda k: k not in Memory.__struct_fields__),
    st.one_of(st.integers(), st.text(), st.booleans(), st.lists(st.integers())), max_size=4))
def test_unknown_keys_survive_a_rewrite(extra):
    m = memory(content="body", extra=extra)
    assert frontmatter.parse(frontmatter.render(m).decode(), "x").memory.extra == extra


def test_front_matter_keys_in_field_order_and_datetimes_with_zone():
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    text = frontmatter.render(memory(content="x", title="x", created_at=when,
                                     updated_at=when)).decode()
    keys = [line.split(":")[0] for line in text.split("---\n")[1].splitlines()
            if line and not line.startswith(("-", " "))]
    assert keys[:4] == ["id", "title", "content_hash", "kind"]
    assert "created_at: '2026-01-02T03:04:05+00:00'" in text
    assert frontmatter.parse(text, "x").memory.created_at == when


def test_hand_written_files():
    plain = frontmatter.parse("Just a thought.\n", "file-id")
    assert plain.memory.id == "file-id" and plain.memory.content == "Just a thought."
    assert plain.present == frozenset()
    sloppy = frontmatter.parse(
        "---\ntags: a, b\ncreated_at: 2024-02-03\nid: 42\n---\nhi", "f")
    assert sloppy.memory.tags == ["a", "b"] and sloppy.memory.id == "42"
    assert sloppy.memory.created_at == datetime(2024, 2, 3, tzinfo=UTC)
    crlf = frontmatter.parse("---\r\nsource: me\r\n---\r\nwindows\r\n", "f")
    assert crlf.memory.source == "me" and crlf.memory.content == "windows"
    bom = frontmatter.parse("\ufeff---\nsource: me\n---\nbom", "f")
    assert bom.memory.source == "me"


def test_every_bad_value_is_named_and_the_file_refused():
    with pytest.raises(frontmatter.InvalidFields) as info:
        frontmatter.parse("---\nimportance: very\nsession: ../../tmp\nid: a/b\n"
                          "tags: [ok, 'x,y']\nversion: 0\n---\nhi", "f")
    assert set(info.value.problems) == {"importance", "session", "id", "tags", "version"}


@pytest.mark.parametrize("text", ["---\nkey: [unclosed\n---\nx", "---\n- a list\n---\nx",
                                  "---\nnever closed\n"])
def test_broken_front_matter_is_refused_not_guessed(text):
    with pytest.raises(frontmatter.FrontMatterError):
        frontmatter.parse(text, "f")


def test_content_hash_normalises():
    assert content_hash(" Cafe\u0301 ") == content_hash("Café")
    assert content_hash("a") != content_hash("A")


@pytest.mark.parametrize("odd", ["\x85", "a\u2028b", "\u2029", "\ufeff", "\x00", "é"])
def test_yaml_line_break_characters_in_values_round_trip(odd):
    m = memory(content="body", tags=[f"t{odd}t"], source=odd, extra={odd: odd})
    back = frontmatter.parse(frontmatter.render(m).decode(), "x").memory
    assert (back.tags, back.source, back.extra) == ([f"t{odd}t"], odd, {odd: odd})


@pytest.mark.parametrize("loader", ["libyaml", "python"])
def test_both_yaml_loaders_read_and_refuse_alike(monkeypatch, loader):
    """libyaml when PyYAML has it, else the pure-Python parser: the same checks."""
    if loader == "python":
        monkeypatch.setattr(frontmatter, "_Loader", yaml.SafeLoader)
    inside = frontmatter.MAX_DEPTH - 1  # the front matter's own mapping is the first level
    nested = "{d: " * inside + "1" + "}" * inside
    ok = frontmatter.parse(f"---\nid: x1\ntags: [a, b]\ndeep: {nested}\n---\nbody\n", "x1")
    assert ok.memory.tags == ["a", "b"] and ok.memory.content == "body"
    assert ok.memory.extra["deep"]["d"]["d"] is not None
    deeper = "[" * frontmatter.MAX_DEPTH + "]" * frontmatter.MAX_DEPTH  # one level too many
    for text, why in [("---\ntags: &t [a]\nlinks: *t\n---\nx", "anchors or aliases"),
                      ("---\nid: &i x2\n---\nx", "anchors or aliases"),
                      (f"---\nextra: {deeper}\n---\nx", "nested too deeply"),
                      ("---\na: [b\n---\nx", "not valid YAML")]:
        with pytest.raises(frontmatter.FrontMatterError, match=why):
            frontmatter.parse(text, "x3")


# Strings built from the characters that decide how YAML writes a scalar.
_tricky = st.text(alphabet="aZy09 :#-_.+/'\"\n\té\u2028xneo,?!()[]{}&*|>%@`\u2026\u2019\x85\x07",
                  max_size=12) | st.sampled_from(
    ["yes", "No", "on", "null", "~", "2026", "0x1f", "0o17", "1e5", "3.5", "1_000", "12:30",
     "2026-11-23", "2026-11-23T15:09:02+00:00", ".inf", "-1", "+1", "a: b", "a #b", "---",
     "a:", "<<", "=", "abc-1"])
_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _tricky)


@settings(max_examples=1500, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "tags", "source", "importance", "x_y", "title"]),
                       _scalars | st.lists(_scalars, max_size=4), max_size=5))
def test_the_fast_front_matter_writes_what_pyyaml_writes(fields):
    fast = frontmatter.fast_head(fields)
    assert fast is None or fast == frontmatter.yaml_head(fields)


def test_a_written_memorys_front_matter_takes_the_fast_path():
    m = memory(content="x", content_hash=content_hash("x"), tags=["ui", "2026", "a b"],
               title="Mei decided on the pricing page; follow-up in Osaka (0)… Ann's: yes?",
               created_at=datetime(2026, 11, 23, 15, 9, 2, 5, tzinfo=UTC),
               updated_at=datetime(2026, 11, 23, 15, 9, 2, 5, tzinfo=UTC), importance=0.35)
    fields = frontmatter.fields_of(m)
    fast = frontmatter.fast_head(fields)
    assert fast is not None and fast == frontmatter.yaml_head(fields)


def test_wikilinks_are_left_out_rather_than_make_a_file_unreadable():
    ids = [f"{n:08d}-aaaa-4bbb-8ccc-dddddddddddd" for n in range(1000)]
    names = {i: f"{'a-long-title-of-a-linked-note-' * 2}{i[:8]}" for i in ids}
    many = memory(content="hub", links=ids)
    text = frontmatter.render(many, names).decode()
    assert "wikilinks" not in text and frontmatter.parse(text, "x").memory.links == ids
    few = memory(content="one", links=ids[:2])
    text = frontmatter.render(few, names).decode()
    assert f"- '[[{names[ids[0]]}]]'" in text
    assert frontmatter.parse(text, "x").memory.extra == {}
