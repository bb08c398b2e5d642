"""The published key forms of two maintained rule sets, gitleaks' (gitleaks_formats.py)
and detect-secrets' (read from the installed package), drawn at random by Hypothesis
(a fixed seed: the same cases every run), each in every context a person pastes one
in and in every field of a memory: what either project calls a key is cut everywhere."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import string

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memoryd.schema import Memory
from memoryd.secrets.fields import scrub_memory
from memoryd.secrets.redact import Redactor
from memoryd.secrets.rules import entropy
from tests.secrets.gitleaks_formats import GITLEAKS

CONTEXTS = ["{}", "{}.", "{},", "{};", "{}:", "{}!", "{}?", "({})", "[{}]", "<{}>", '"{}"',
            "'{}'", "`{}`", "{}.\n", "{}\n", "{}).", "{}...", "the key is {}.",
            "export X={}", "X={}\n"]
FIELDS = ["content", "title", "tag", "source", "source_path", "extra key", "extra value"]
PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)
redactor = Redactor()


def _issued(secret: str) -> bool:
    """A drawn value as a service issues one: letters and digits mixed and random, or a
    long number (Hypothesis also draws `aaaaaaaaaaaaaaaa0`, which no service issues)."""
    if secret.isdigit():
        return len(secret) >= 15
    return (any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)
            and entropy(secret) >= 3.0)


def _leaks(drawn: str, secret: str) -> list[str]:
    """Where `secret` survives `drawn` put in each context × field."""
    out = []
    for context in CONTEXTS:
        text = context.format(drawn)
        line = text.replace("\n", " ").strip()
        tag = line.replace(",", " ")
        memory = Memory(id="a", title=line[:200], content=text,
                        tags=[tag] if len(tag) <= 64 else [],
                        source=line[:128], source_path=line, extra={line: text},
                        session="s", links=[])
        scrub_memory(redactor, memory)
        fields = dict(zip(FIELDS, [memory.content, memory.title, memory.tags[0] if memory.tags
                                   else "", memory.source, memory.source_path or "",
                                   next(iter(memory.extra)), json.dumps(memory.extra)],
                          strict=True))
        out += [f"{context!r} in {f}" for f, v in fields.items() if secret in v]
    # A name (an id, a session) holding a secret is replaced whole when the redactor
    # finds one in it (fields.scrub_name, tested end to end in test_secret_fields.py);
    # its costly digest is not made a thousand times here.
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", drawn) and not redactor.scan(drawn):
        out += ["as a name (id, session)"]
    return out


def _detect_secrets_forms() -> list[tuple[str, re.Pattern[str]]]:
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    # Forms a key has on its own (a keyword plugin's "password = ..." is rules.py's
    # assignment rule; a public IP address is no secret).
    skip = {"IPPublicDetector", "CloudantDetector", "IbmCloudIamDetector",
            "IbmCosHmacDetector", "SoftlayerDetector", "PrivateKeyDetector",
            "BasicAuthDetector", "NpmDetector", "JwtTokenDetector", "AWSKeyDetector"}
    forms = []
    for module in pkgutil.iter_modules(plugins.__path__):
        mod = importlib.import_module(f"detect_secrets.plugins.{module.name}")
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            if (issubclass(cls, RegexBasedDetector) and cls is not RegexBasedDetector
                    and cls.__module__ == mod.__name__ and name not in skip):
                forms += [(name, p) for p in cls().denylist]
    return forms


DETECT_SECRETS = _detect_secrets_forms()
TOKENS = [(i, re.compile(x)) for i, kind, x in GITLEAKS if kind == "token"]
ASSIGNED = [(i, re.compile(x)) for i, kind, x in GITLEAKS if kind == "assignment"]


def _secret_of(pattern: re.Pattern[str], drawn: str) -> str:
    match = pattern.fullmatch(drawn) or pattern.search(drawn)
    assert match is not None
    groups = [g for g in match.groups() if g]
    return (max(groups, key=len) if groups else match.group(0)).strip(" \t\"'`=:")


def test_the_rule_sets_are_all_here():
    assert len(TOKENS) > 100 and len(ASSIGNED) > 90 and len(DETECT_SECRETS) > 20


# MEMORYD_SECRET_EXAMPLES: more draws, for a longer run by hand.
@settings(derandomize=True, deadline=None,
          max_examples=int(os.environ.get("MEMORYD_SECRET_EXAMPLES", "150")),
          phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(st.data())
@pytest.mark.parametrize("forms", ["gitleaks-tokens", "gitleaks-assignments",
                                   "detect-secrets"])
def test_every_published_form_is_cut_in_every_context_and_field(forms, data):
    table = {"gitleaks-tokens": TOKENS, "gitleaks-assignments": ASSIGNED,
             "detect-secrets": DETECT_SECRETS}[forms]
    name, pattern = data.draw(st.sampled_from(table))
    drawn = data.draw(st.from_regex(pattern, fullmatch=True, alphabet=PRINTABLE)
                      .filter(lambda s: len(s) < 600))
    secret = _secret_of(pattern, drawn)
    if not _issued(secret) or len(secret) < 8 or drawn.count(secret) > 1:
        return  # Hypothesis's `aaaa...` (not what a service issues), or the value drawn
        # again into the name before it (`<value>netlify = <value>`)
    if forms == "gitleaks-assignments":
        secret_text = drawn  # the service's name and the assignment are its context
        leaks = [c for c in _leaks_in(secret_text, secret)]
    else:
        leaks = _leaks(drawn.strip(), secret)
    assert leaks == [], f"{name}: {secret!r} kept in {leaks[:4]}"


def _leaks_in(text: str, secret: str) -> list[str]:
    """An assignment drawn whole (`<name>... = <key>`), in every context, as content."""
    return [context for context in CONTEXTS
            if secret in redactor.clean(context.format(text))]


LOOK_ALIKES = [
    "fixed in commit 3f2a9c1b2d4e5f60718293a4b5c6d7e8f9012345 last week",
    "the request id was 0f0e0d0c-0b0a-4909-8807-060504030201",
    "version: 2.14.3-beta.1+build.20261126",
    "sentry-sdk==1.40.0 and twitter: https://x.com/acme2024",
    "sentry: 7.12.0-rc1", "heroku run bash", "APAC sales were up",
    "the API-DOCUMENTATION-REFERENCE page", "s.wikipedia.org", "key-value store",
    "pattern matching in Python 3.10", "SK Telecom and AC Milan",
    "docker pull python:3.11-slim-bookworm",
    string.ascii_letters,
]


def test_look_alikes_of_the_new_forms_stay():
    assert [t for t in LOOK_ALIKES if redactor.clean(t) != t] == []
