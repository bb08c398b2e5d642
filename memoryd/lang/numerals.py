"""Number words, English and Chinese: the one table of each, for every rule that reads a
count in a text (the time words of a question, a reminder's "in two hours" / "三天后").
A rule's pattern says which words it takes; what each is worth is said here only.
"a few" (几) is three and "several" four, as a question about "the last few days" means.
"""

from __future__ import annotations

EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
              "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
              "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
              "several": 4}
ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
             "六": 6, "七": 7, "八": 8, "九": 9, "几": 3}


def zh_number(text: str) -> int:
    """Arabic or Chinese numerals up to 99: "12", "十二", "二十三", "十", "几" (a few).
    KeyError for what is none of them."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)
    return ZH_DIGITS[text]


def count(word: str) -> int:
    """What a number word is worth (digits, English, Chinese), or 0 for no number."""
    word = " ".join(word.casefold().split())
    if word.isdigit():
        return int(word)
    if word in EN_NUMBERS:
        return EN_NUMBERS[word]
    try:
        return zh_number(word)
    except KeyError:
        return 0
