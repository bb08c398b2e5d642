"""A question about the speakers of a transcript, asked in their voice for the dense
side: their turns say "I" and "my", not their names ("What has John done?" -> "What
have I done?").

Every turn of a transcript opens with its speaker's name, so in a question the name
matches all of that person's turns alike, and it pulls toward the other speaker's turns
that address them ("Hey John!"). In the first person the question matches what the
person said of themselves. A question about two speakers reads "I" for each ("What do
I and I have in common?"): whichever of them speaks says "I". Only the embedding reads
the rewritten question: keywords, entities and time still read it as asked."""

from __future__ import annotations

import re
from collections.abc import Collection

from memoryd.lang.names import QueryWords, in_query

# The verb that agreed with the name agrees with "I": "has John" -> "have I".
_AGREE = {"has": "have", "does": "do", "is": "am"}
_BEFORE = re.compile(r"\b(has|does|is)(\s+I)\b", re.I)
_AFTER = re.compile(r"\b(I\s+)(has|does|is)\b", re.I)


def in_voice(query: str, speakers: Collection[str], words: QueryWords | None = None) -> str:
    """`query` with each speaker it names (of `speakers`' keys) made "I" ("my" for
    "John's"); as it is when it names none, or when a name is written other than its
    key reads (accents: the key has none). `words`: the query already split."""
    if not speakers:
        return query
    voiced, changed = query, 0
    for key in in_query(query if words is None else words, lambda k: k in speakers):
        spelled = r"\s+".join(re.escape(w) for w in key.split())
        name = re.compile(rf"(?<![\w'’]){spelled}(['’]s)?(?![\w'’])", re.I)
        voiced, n = name.subn(lambda m: "my" if m.group(1) else "I", voiced)
        changed += n
    if not changed:
        return query
    voiced = _BEFORE.sub(lambda m: _agree(m.group(1)) + m.group(2), voiced)
    return _AFTER.sub(lambda m: m.group(1) + _agree(m.group(2)), voiced)


def _agree(verb: str) -> str:
    said = _AGREE[verb.lower()]
    return said.capitalize() if verb[0].isupper() else said
