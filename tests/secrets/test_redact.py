"""Every secret of the corpus is cut, its kind named, nothing of it left; the
look-alikes stay as they are (at most 5% touched); a rule can be turned off."""

from __future__ import annotations

import random
import string

import pytest

from memoryd.secrets.redact import Redactor
from memoryd.secrets.rules import KINDS, RULES, haystack
from tests.secrets.corpus import LOOK_ALIKES, SECRETS


def test_the_corpus_is_big_and_varied_enough():
    assert len(SECRETS) >= 50 and len({kind for kind, _, _ in SECRETS}) >= 15
    assert len(LOOK_ALIKES) >= 50


@pytest.mark.parametrize(("kind", "secret", "text"), SECRETS,
                         ids=[f"{k}-{n}" for n, (k, _, _) in enumerate(SECRETS)])
def test_every_secret_is_cut_and_named(kind, secret, text):
    cleaned, found = Redactor().scrub(text)
    assert secret not in cleaned
    assert found[kind] >= 1, (cleaned, found)
    assert kind == "private" or f"[REDACTED:{kind}]" in cleaned


@pytest.mark.parametrize("case", [str, str.upper, str.lower, str.swapcase])
def test_every_match_holds_one_of_its_rules_hints(case):
    """A rule is tried only on a text holding one of its hints: each must be in every
    match, in every case a pattern that ignores case matches, and for the letters such a
    pattern takes for an ASCII one ("ſecret", "PASSWORD", "İ")."""
    odd = ["ſecret_key = 'Zx9fQ2LmT7pV4nK8'", "PASSWORD=hunter22!", "passwordİ = abc123xyz9",
           "AWS_SECRET_ACCESS_KEY=" + "Ab1/" * 10, "Bearer " + "aB3dE5gH7jK9mN1pQ3sT5vW7"]
    for text in [t for _, _, t in SECRETS] + odd:
        text = case(text)
        for rule in RULES:
            if rule.hints and rule.pattern.search(text):
                hay = haystack(text)
                assert any(hint in hay for hint in rule.hints), (rule.kind, text)


def test_look_alikes_stay():
    touched = [t for t in LOOK_ALIKES if Redactor().scrub(t)[0] != t]
    assert len(touched) <= 0.05 * len(LOOK_ALIKES), touched


def test_a_rule_turned_off_keeps_its_kind_and_counts_are_kept():
    redactor = Redactor(["assignment"])
    assert redactor.clean("password: hunter2hunter2") == "password: hunter2hunter2"
    assert "[REDACTED:github]" in redactor.clean("ghp_" + "a1" * 18)
    assert redactor.counts() == {"github": 1}
    assert redactor.scan("ghp_" + "b2" * 18) == 1 and redactor.counts() == {"github": 1}
    with pytest.raises(ValueError, match="no such secret rule: nope"):
        Redactor(["nope"])
    assert "private" in KINDS


def test_cleaning_twice_changes_nothing_more():
    redactor = Redactor()
    for _, _, text in SECRETS:
        once = redactor.clean(text)
        assert redactor.clean(once) == once


# What follows or surrounds a secret as people paste it: the end of a sentence, a list,
# quotes, brackets, a line end.
CONTEXTS = ["{}", "{}.", "{},", "{};", "{}:", "{}!", "{}?", "({})", "[{}]", "<{}>", '"{}"',
            "'{}'", "`{}`", "{}.\n", "{}\n", "{}).", "{}...", "{}.)"]
# A secret with no provider form, after what names it: a bare key, a name joined by
# underscores (an environment variable), words.
NAMED = ["key={}", "secret {}", "export MY_SECRET_KEY={}", "export DB_PASSWORD={}",
         "token: {}", "the access key AKIAIOSFODNN7EXAMPLE and secret {}",
         "STRIPE_API_KEY: {}", "the signing key is {}"]
_draw = random.Random(59)
GENERIC = ["".join(_draw.choice(alphabet) for _ in range(n)) + "7"
           for n, alphabet in ((39, string.ascii_letters + string.digits + "/+"),
                               (63, "0123456789abcdef"), (31, string.ascii_letters + string.digits),
                               (27, string.ascii_letters + string.digits + "_-"))]


def _in_contexts() -> list[tuple[str, str]]:
    cases = []
    for kind, secret, text in SECRETS:
        if kind in ("private", "private-key") or secret not in text:
            continue
        for context in CONTEXTS:
            if kind == "connection-string" and "\n" in context:
                continue  # a line end inside a URL is no URL
            cases.append((secret, text.replace(secret, context.format(secret))))
    for secret in GENERIC:
        cases += [(secret, context.format(named.format(secret)))
                  for named in NAMED for context in CONTEXTS]
    return cases


IN_CONTEXTS = _in_contexts()


def test_a_secret_is_cut_whatever_punctuation_or_quoting_surrounds_it():
    """Every provider form and every unnamed token after a key's name, in every context:
    nothing of the secret reaches the cleaned text."""
    assert len(IN_CONTEXTS) > 1000
    redactor = Redactor()
    leaked = [text for secret, text in IN_CONTEXTS if secret in redactor.clean(text)]
    assert leaked == [], f"{len(leaked)} of {len(IN_CONTEXTS)} leaked, e.g. {leaked[:5]}"
