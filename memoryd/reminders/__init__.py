"""Reminders: the desktop notification a due reminder raises (when one is due is read
by lang/due.py, whether a sentence asks for one by lang/intents.py)."""
