"""Reminders: natural-language times (English and Chinese) and due notifications."""
