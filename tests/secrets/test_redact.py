"""Every secret of the corpus is cut, its kind named, nothing of it left; the
look-alikes stay as they are (at most 5% touched); a rule can be turned off."""

from __future__ import annotations

import pytest

from memoryd.secrets.redact import Redactor
from memoryd.secrets.rules import KINDS
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
