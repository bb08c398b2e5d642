"""The one table of number words: each worth the same to every rule that reads one."""

from __future__ import annotations

from memoryd.lang.numerals import count, zh_number


def test_number_words_in_both_languages():
    assert [count(w) for w in ("3", "three", "A couple  of", "a few", "several", "几", "两",
                               "十二", "二十三", "nope")] == [3, 3, 2, 3, 4, 3, 2, 12, 23, 0]
    assert count("几") == count("a few")  # one meaning, whichever language asks
    assert [zh_number(x) for x in ("十", "十一", "九十九", "〇")] == [10, 11, 99, 0]
