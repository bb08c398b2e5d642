"""Where a sentence's structure is unsure, the nearest prototypes say what it is.

"I feel really upset" and "I moved to Denver" are built alike — the speaker, a verb,
what follows — so the structure rules (lang/kinds.py) read both as a statement of
the speaker's. What tells talk from a fact is meaning: a sentence is taken for
chit-chat when the sentences most like it among CHAT are nearer, by a clear MARGIN,
than those most like it among FACT, in the embedder's space.

The prototypes were written from the types' definitions (bench/data/messages/README.md:
reactions, feelings in passing, thanks, plans to try what was suggested, against what
holds or happened), not taken from the labelled sentences the margin was chosen on;
English only, as the embedder is English: its vector of a Chinese sentence does not
tell the two apart. Measured in bench/sentence_types.py on both halves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from memoryd.lang.kinds import kind_of
from memoryd.lang.sentences import has_cjk

CHAT = (
    "I feel so tired today.",
    "That sounds wonderful, thank you for the suggestion.",
    "I'm really nervous about it.",
    "Haha, that's so true.",
    "I'll give it a try and let you know how it goes.",
    "I really appreciate your help.",
    "I hope things get better soon.",
    "You're right, I should be more patient with myself.",
    "That makes a lot of sense.",
    "I can't believe how fast time flies.",
    "It's been a crazy week.",
    "I'm so happy for you!",
    "I wonder what it would be like to live there.",
    "I guess I'll just have to wait and see.",
    "Maybe I could try that sometime.",
    "I'm not sure what to think about it.",
    "It means a lot to hear you say that.",
    "Life can be so unpredictable sometimes.",
    "I'm a little worried that it won't work out.",
    "Let's talk again tomorrow.",
    "I totally agree with you.",
    "That's a great point.",
    "I'm glad you liked it.",
    "I feel like nobody understands me.",
    "I'll keep that in mind.",
    "It was nice talking with you.",
    "Good luck with everything!",
    "I'm excited to see what happens next.",
    "Sounds like a plan.",
    "Those pictures look amazing.",
)
FACT = (
    "I work as a nurse at the city hospital.",
    "My daughter starts school in September.",
    "I moved to Denver two years ago.",
    "I adopted a cat named Luna last month.",
    "My brother is getting married in June.",
    "I've been learning Spanish for three months.",
    "I ran my first half marathon last weekend.",
    "My car is a 2015 Toyota Camry.",
    "I'm allergic to peanuts.",
    "We bought a house near the lake.",
    "I have two kids, both in high school.",
    "I started a new job at a bakery downtown.",
    "My mom was diagnosed with diabetes last year.",
    "I volunteer at the animal shelter on Saturdays.",
    "I finished reading the whole Harry Potter series.",
    "My favorite band is playing in town next week.",
    "I'm planning a trip to Japan in the spring.",
    "I just got promoted to team lead.",
    "The staging server runs Ubuntu 22.04.",
    "Our API uses JWT tokens for authentication.",
    "I graduated with a degree in biology.",
    "My husband and I celebrated our tenth anniversary.",
    "I used to play the violin when I was a kid.",
    "I've been going to therapy every week since January.",
    "I took a pottery class yesterday.",
    "My sister lives in Toronto.",
    "I switched to a standing desk at work.",
    "I'm training for a triathlon in August.",
    "Last night I cooked lasagna for my parents.",
    "I bought a new camera to take photos of birds.",
)
NEAREST = 3  # the mean of the best few: one prototype alike by chance does not decide
# Chosen on the tuning half: at 0.05 nearly as many sentences of other types turn to
# chit-chat as chit-chat is caught (9 to 11); at 0.1, 3 to 7.
MARGIN = 0.1

Embed = Callable[[list[str]], np.ndarray]


class Prototypes:
    """The prototypes in the space of `embed` (the engine's embedder: its vectors are
    normalised), embedded at the first question; safe to share between threads."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._lock = threading.Lock()
        self._groups: tuple[np.ndarray, np.ndarray] | None = None

    def lean(self, sentence: str) -> float:
        """How much nearer chit-chat than a fact `sentence` is by meaning: the mean
        cosine of its NEAREST among CHAT less that among FACT."""
        with self._lock:
            if self._groups is None:
                self._groups = (np.asarray(self._embed(list(CHAT))),
                                np.asarray(self._embed(list(FACT))))
            chat, fact = self._groups
        vector = np.asarray(self._embed([sentence]))[0]
        return _nearest(vector, chat) - _nearest(vector, fact)

    def is_chat(self, sentence: str) -> bool:
        """Whether a sentence the structure rules read as a statement (a fact or a
        preference, in English) is chit-chat by meaning; False for any other."""
        if has_cjk(sentence) or kind_of(sentence) not in ("fact", "preference"):
            return False
        return self.lean(sentence) > MARGIN


def _nearest(vector: np.ndarray, group: np.ndarray) -> float:
    return float(np.sort(group @ vector)[-NEAREST:].mean())
