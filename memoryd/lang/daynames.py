"""The English names of the months and the weekdays, lowercase, in calendar order, and
the Chinese weekdays (星期一 ... 星期日): what the time parsers read and what entity
extraction knows is not a name."""

from __future__ import annotations

MONTHS = ("january february march april may june july august september october "
          "november december").split()
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS_ZH = "一二三四五六日"  # 天 is Sunday too (星期天)
