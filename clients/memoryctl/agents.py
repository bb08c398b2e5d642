"""The coding agents memoryd hooks into: one definition of where each keeps its
settings, which of its hook events do what, and where its transcripts are.

Each agent runs `memoryctl hook <agent>` with the event's JSON on stdin:
- `start` (a session begins): the project's `<memory>` block (memory_context) is
  printed as context;
- `prompt` (the user sent a prompt): the recall block for the prompt, when anything
  is relevant;
- `store` (a turn ended, the context is compacted, the session ends): the session's
  transcript is handed to the daemon (memory_ingest of that one file: each turn once,
  known by its line's id).
The three agents' hooks take the same input fields (`session_id`, `transcript_path`,
`cwd`, `hook_event_name`, `prompt`) and read context from
`hookSpecificOutput.additionalContext`; Gemini CLI names its events differently and
counts timeouts in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["start", "prompt", "store"]

# Seconds the agent allows the hook (its settings), and the hook's own budget within
# them: a hook that runs out prints nothing and exits 0.
TIMEOUTS: dict[Action, int] = {"start": 15, "prompt": 10, "store": 60}
DEADLINES: dict[Action, float] = {"start": 5.0, "prompt": 3.0, "store": 30.0}
# Tokens of the printed block.
BUDGETS: dict[Action, int] = {"start": 800, "prompt": 300}


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    settings: str  # the user's settings file, under the home folder
    project_settings: str  # a project's, under its root
    events: dict[str, Action]
    source: str  # the memory_ingest source that reads its transcripts
    context_file: str  # the instructions file it reads in a project
    milliseconds: bool = False  # its settings count timeouts in ms


AGENTS: dict[str, Agent] = {a.name: a for a in (
    Agent("claude-code", "Claude Code", ".claude/settings.json", ".claude/settings.json",
          {"SessionStart": "start", "UserPromptSubmit": "prompt", "Stop": "store",
           "PreCompact": "store", "SessionEnd": "store"},
          "claude-code", "CLAUDE.md"),
    Agent("codex", "Codex CLI", ".codex/hooks.json", ".codex/hooks.json",
          {"SessionStart": "start", "UserPromptSubmit": "prompt", "Stop": "store",
           "PreCompact": "store"},
          "codex", "AGENTS.md"),
    Agent("gemini", "Gemini CLI", ".gemini/settings.json", ".gemini/settings.json",
          {"SessionStart": "start", "BeforeAgent": "prompt", "AfterAgent": "store",
           "PreCompress": "store", "SessionEnd": "store"},
          "gemini", "GEMINI.md", milliseconds=True),
)}
