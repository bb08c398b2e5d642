"""Entities: the people, places, organisations and things a memory names (names.py),
read from its text without a model; the catalog keeps them and ranking follows them."""
