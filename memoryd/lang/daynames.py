"""The English names of the months and the weekdays, lowercase, in calendar order:
what the time parsers read and what entity extraction knows is not a name."""

from __future__ import annotations

MONTHS = ("january february march april may june july august september october "
          "november december").split()
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
