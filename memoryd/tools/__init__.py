"""The tools: one thin function per tool over the engine, and the table of them."""
