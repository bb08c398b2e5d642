"""Secrets: what is cut out of every text before it is written anywhere (rules.py, the
rules; redact.py, the redactor the engine holds)."""
