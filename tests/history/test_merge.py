"""The rules two versions of one memory merge by: the same result whichever machine
computes it, the higher version first, sets merged as sets, nothing of the loser lost."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.history import merge
from memoryd.schema import Memory
from memoryd.store import frontmatter

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def copy(path: str = "categories/knowledge/x.md", **fields) -> merge.Copy:
    memory = Memory(id="0b6c2f3e-0000-4000-8000-000000000001", created_at=T0,
                    updated_at=fields.pop("updated_at", T0), **fields)
    return merge.read(path, frontmatter.render(memory).decode())


def test_the_higher_version_wins_and_the_other_is_kept() -> None:
    a = copy(content="floor 4", version=2)
    b = copy(content="floor 6", version=3)
    for first, second in ((a, b), (b, a)):
        merged = merge.merge(first, second)
        assert merged.winner.memory.content == "floor 6"
        assert merged.kept is not None and merged.kept.content == "floor 4"
        assert merged.kept.replaced_by == merged.kept.id  # a version, not a soft delete
    assert merge.merge(a, b).text == merge.merge(b, a).text
    assert merge.merge(a, b).first_won is False and merge.merge(b, a).first_won is True


def test_ties_go_to_the_later_update_then_to_the_text_on_every_machine() -> None:
    early = copy(content="one", version=2, updated_at=T0)
    late = copy(content="two", version=2, updated_at=datetime(2026, 11, 2, tzinfo=UTC))
    assert merge.merge(early, late).winner.memory.content == "two"
    x, y = copy(content="x", version=2), copy(content="y", version=2)
    assert merge.merge(x, y).text == merge.merge(y, x).text  # a full tie: still one answer


def test_sets_merge_as_sets_and_a_removal_stays_removed() -> None:
    base = copy(content="v1", tags=["a", "b"], links=[]).memory
    mine = copy(content="v2", version=2, tags=["a", "b", "mine"])
    theirs = copy(content="v3", version=3, tags=["a", "theirs"],  # took b out
                  links=["0b6c2f3e-0000-4000-8000-000000000002"])
    merged = merge.merge(mine, theirs, base)
    assert merged.winner.memory.tags == ["a", "theirs", "mine"]
    assert merged.winner.memory.links == ["0b6c2f3e-0000-4000-8000-000000000002"]
    without_base = merge.merge(mine, theirs)
    assert set(without_base.winner.memory.tags) == {"a", "b", "mine", "theirs"}


def test_the_users_own_keys_and_access_counts_are_kept() -> None:
    mine = copy(content="v2", version=2, extra={"mood": "calm"}, access_count=9)
    theirs = copy(content="v3", version=3, extra={"project": "x"}, access_count=2)
    merged = merge.merge(mine, theirs)
    assert merged.winner.memory.extra == {"project": "x", "mood": "calm"}
    assert merged.winner.memory.access_count == 9
    assert "mood: calm" in merged.text


def test_the_same_content_is_not_kept_twice() -> None:
    a = copy(content="same", version=2, access_count=1)
    b = copy(content="same", version=2, access_count=5)
    merged = merge.merge(a, b)
    assert merged.kept is None and merged.winner.memory.access_count == 5


def test_a_file_without_an_id_is_no_memory_copy() -> None:
    assert merge.read("categories/knowledge/x.md", "just text\n") is None
    assert merge.read("categories/knowledge/x.md", "---\nversion: [\n---\nx") is None
