"""memoryctl: the thin human CLI for memoryd. Plain `socket` + `json`; nothing heavy."""
