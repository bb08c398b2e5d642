"""The language rules, English and Chinese side by side: what memoryd reads in a text
without a model. Every other package that reads language imports it from here; a
regular expression outside it is for a format (ids, paths, front matter, markup,
secrets' forms), never for what a sentence says.

- `sentences`: cleaning a text, its sentences, the weight of its words;
- `names`: the people, places and things a text names, and those a question names;
- `facts`, `frames`: the facts a statement states, and the subject and attribute a fact
  is about (which a later fact may change);
- `gate`, `signals`: whether a turn is worth learning from, and how much it weighs;
- `timewords`, `timespans`, `daynames`, `numerals`: the times a question or a text
  names, and the words and numbers they are written with;
- `due`, `intents`: when a reminder is due, and whether a sentence asks for one;
- `voice`: a question about a speaker in their own voice;
- `terms`, `titles`: a memory's index terms (stems), and its title;
- `classify`: the category a text is about.

The snapshot keeps readings some of these make (retrieval/snapshot.py READ_BY_RULES):
a changed rule there reads every row again at the next start."""
