"""The Anthropic API's client-side memory tool (`memory_20250818`), backed by memoryd.

The API gives Claude a `/memories` tree of files and asks the application to run
its commands: `view`, `create`, `str_replace`, `insert`, `delete`, `rename`. Here each
file is one memory (source `memory-tool`), its path the memory's first line
(`# /memories/notes/todo.md`, so `memoryctl` and an editor show it), its text the
rest. So what Claude keeps there is searched, ranked and recalled with everything
else. A secret in it is redacted, and an edit or a delete keeps the earlier version
(`memory_history`, `memory_restore`). Directories are the paths' prefixes.

    from memoryd_client import Client
    from memoryd_client.memory_tool import MemoryTool
    tool = MemoryTool(Client(name="my-app"))
    result = tool.execute({"command": "view", "path": "/memories"})

With the official `anthropic` package, `anthropic_memory_tool(tool)` is a
`BetaAbstractMemoryTool` to hand to `client.beta.messages.tool_runner(tools=[...])`.
The replies match the SDK's own file-system tool, word for word. The standard
library only: `anthropic` is imported only by that function.
"""

from __future__ import annotations

import posixpath
from typing import Any

from memoryd_client.sync import Client
from memoryd_client.wire import RpcFailure

ROOT = "/memories"
SOURCE = "memory-tool"
LINE_NUMBER_WIDTH = 6
PAGE = 1000


class MemoryToolError(Exception):
    """A command that cannot be done; its message is what Claude is told."""


class MemoryTool:
    def __init__(self, client: Client, scope: str | None = None) -> None:
        self.client = client
        self.scope = scope  # None: the connection's default scope

    def execute(self, command: dict[str, Any]) -> str:
        """Run one command as the API sends it (a dict with `command`). Whatever fails
        is a MemoryToolError, which the model is told: a command missing a field, of
        the wrong type, or refused by the daemon."""
        try:
            return self._execute(command)
        except RpcFailure as exc:
            raise MemoryToolError(exc.message) from None
        except (KeyError, TypeError, AttributeError) as exc:
            raise MemoryToolError(f"Invalid {command.get('command')!r} command: "
                                  f"{type(exc).__name__}: {exc}") from None

    def _execute(self, command: dict[str, Any]) -> str:
        name = command.get("command")
        if name == "view":
            return self.view(command["path"], command.get("view_range"))
        if name == "create":
            return self.create(command["path"], command["file_text"])
        if name == "str_replace":
            return self.str_replace(command["path"], command["old_str"], command["new_str"])
        if name == "insert":
            return self.insert(command["path"], command["insert_line"], command["insert_text"])
        if name == "delete":
            return self.delete(command["path"])
        if name == "rename":
            return self.rename(command["old_path"], command["new_path"])
        raise MemoryToolError(f"Unknown command: {name}")

    # -- the commands ---------------------------------------------------------------
    def view(self, path: str, view_range: list[int] | None = None) -> str:
        path = _checked(path)
        files = self._files()
        if path in files:
            lines = files[path][1].split("\n")
            start = 1
            if view_range and len(view_range) == 2:
                start = max(1, view_range[0])
                end = len(lines) if view_range[1] == -1 else view_range[1]
                lines = lines[start - 1:end]
            numbered = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}"
                        for n, line in enumerate(lines, start)]
            return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)
        inside = {p: t for p, (_, t) in files.items() if p.startswith(path.rstrip("/") + "/")}
        if not inside and path != ROOT:
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid "
                                  "path.")
        entries: dict[str, int] = {}
        for file, text in inside.items():
            parts = file[len(path.rstrip("/")) + 1:].split("/")
            for depth in range(1, min(len(parts), 2) + 1):  # up to 2 levels deep
                name = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
                entries[name] = entries.get(name, 0) + len(text.encode())
        lines = [f"{_size(sum(entries.values()))}\t{path}"]
        lines += [f"{_size(size)}\t{path.rstrip('/')}/{name}"
                  for name, size in sorted(entries.items())]
        return (f"Here're the files and directories up to 2 levels deep in {path}, "
                "excluding hidden items:\n" + "\n".join(lines))

    def create(self, path: str, file_text: str) -> str:
        path = _checked(path, file=True)
        if path in self._files():
            raise MemoryToolError(f"File {path} already exists")
        self.client.call("memory_write", self._where({"content": _content(path, file_text),
                                                      "source": SOURCE}))
        return f"File created successfully at: {path}"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        memory_id, text = self._file(path)
        count = text.count(old_str)
        if count == 0:
            raise MemoryToolError(f"No replacement was performed, old_str `{old_str}` did "
                                  f"not appear verbatim in {path}.")
        if count > 1:
            lines, at = [], text.find(old_str)
            while at != -1:
                lines.append(text[:at].count("\n") + 1)
                at = text.find(old_str, at + 1)
            raise MemoryToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` "
                f"in lines: {', '.join(map(str, lines))}. Please ensure it is unique")
        changed = text[:text.find(old_str)].count("\n")
        new_text = text.replace(old_str, new_str)
        self._rewrite(memory_id, path, new_text)
        new_lines = new_text.split("\n")
        snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}"
                   for n in range(max(0, changed - 2) + 1, min(len(new_lines), changed + 3) + 1)]
        return ("The memory file has been edited. Here is the snippet showing the change "
                "(with line numbers):\n" + "\n".join(snippet))

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        memory_id, text = self._file(path)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        if insert_line < 0 or insert_line > len(lines):
            raise MemoryToolError(f"Invalid `insert_line` parameter: {insert_line}. It "
                                  f"should be within the range [0, {len(lines)}].")
        lines.insert(insert_line, insert_text.rstrip("\n"))
        self._rewrite(memory_id, path, "\n".join(lines) + "\n")
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        path = _checked(path)
        if path == ROOT:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        doomed = self._under(path)
        if not doomed:
            raise MemoryToolError(f"The path {path} does not exist")
        for memory_id, _, _ in doomed:  # each to the trash: memory_restore brings it back
            self.client.call("memory_delete", {"id": memory_id})
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old_path, new_path = _checked(old_path), _checked(new_path)
        if old_path == ROOT:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        if new_path.startswith(old_path.rstrip("/") + "/"):
            raise MemoryToolError(f"Cannot move {old_path} into itself ({new_path})")
        if self._under(new_path):
            raise MemoryToolError(f"The destination {new_path} already exists")
        moving = self._under(old_path)
        if not moving:
            raise MemoryToolError(f"The path {old_path} does not exist")
        for memory_id, path, text in moving:
            self._rewrite(memory_id, new_path + path[len(old_path):], text)
        return f"Successfully renamed {old_path} to {new_path}"

    # -- the files as memories ------------------------------------------------------
    def _files(self) -> dict[str, tuple[str, str]]:
        """path -> (memory id, text) of every file in the tree."""
        files: dict[str, tuple[str, str]] = {}
        offset = 0
        while True:
            page = self.client.call("memory_list", self._where(
                {"source": SOURCE, "limit": PAGE, "offset": offset}))["memories"]
            for memory in page:
                parsed = _parsed(memory["content"])
                if parsed is not None:
                    files.setdefault(parsed[0], (memory["id"], parsed[1]))
            if len(page) < PAGE:
                return files
            offset += PAGE

    def _file(self, path: str) -> tuple[str, str]:
        path = _checked(path, file=True)
        files = self._files()
        if path not in files:
            prefix = path.rstrip("/") + "/"
            if any(p.startswith(prefix) for p in files):
                raise MemoryToolError(f"The path {path} is not a file.")
            raise MemoryToolError(f"The path {path} does not exist. Please provide a valid "
                                  "path.")
        return files[path]

    def _under(self, path: str) -> list[tuple[str, str, str]]:
        """(id, path, text) of the file at `path` or every file under it."""
        prefix = path.rstrip("/") + "/"
        return [(memory_id, p, text) for p, (memory_id, text) in self._files().items()
                if p == path or p.startswith(prefix)]

    def _rewrite(self, memory_id: str, path: str, text: str) -> None:
        self.client.call("memory_update", {"id": memory_id, "content": _content(path, text)})

    def _where(self, params: dict[str, Any]) -> dict[str, Any]:
        return params | ({"scope": self.scope} if self.scope else {})


def _checked(path: str, file: bool = False) -> str:
    """`path` inside /memories, normalised; `..` that would leave it is refused."""
    if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
        raise MemoryToolError(f"Path must start with /memories, got: {path}")
    # A name read back is stripped (`_parsed`): "a.txt " or "a.txt\n" would stand for
    # "a.txt", a second file shadowing the first.
    if any(c < " " or c == "\x7f" for c in path) or any(
            part != part.strip() for part in path.split("/")):
        raise MemoryToolError(f"Path {path!r} holds a control character or a name that "
                              "begins or ends with white space")
    clean = posixpath.normpath(path)
    if clean != ROOT and not clean.startswith(ROOT + "/"):
        raise MemoryToolError(f"Path {path} would escape /memories directory")
    if file and clean == ROOT:
        raise MemoryToolError(f"The path {path} is not a file.")
    return clean


def _content(path: str, text: str) -> str:
    return f"# {path}\n\n{text}"


def _parsed(content: str) -> tuple[str, str] | None:
    """(path, text) of a memory written by this tool; None for any other."""
    head, _, rest = content.partition("\n")
    if not head.startswith(f"# {ROOT}"):
        return None
    # The daemon keeps a memory's content without the white space around it: a file is
    # read back as a text file, ending in one newline.
    text = rest[1:] if rest.startswith("\n") else rest
    return head[2:].strip(), text.rstrip("\n") + "\n"


def _size(n: int) -> str:
    """A size as the SDK's file-system tool writes it: 0B, 512B, 1.5K, 2M."""
    if n == 0:
        return "0B"
    unit = min((n.bit_length() - 1) // 10, 3)
    size = n / 1024 ** unit
    shown = f"{int(size)}" if size == int(size) else f"{size:.1f}"
    return shown + "BKMG"[unit]


def anthropic_memory_tool(tool: MemoryTool) -> Any:
    """`tool` as the `anthropic` package's BetaAbstractMemoryTool (imported here)."""
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError

    def run(command: dict[str, Any]) -> str:
        try:
            return tool.execute(command)
        except MemoryToolError as exc:
            raise ToolError(str(exc)) from None

    class MemorydMemoryTool(BetaAbstractMemoryTool):
        def view(self, command: Any) -> str:
            return run(command.model_dump())

        def create(self, command: Any) -> str:
            return run(command.model_dump())

        def str_replace(self, command: Any) -> str:
            return run(command.model_dump())

        def insert(self, command: Any) -> str:
            return run(command.model_dump())

        def delete(self, command: Any) -> str:
            return run(command.model_dump())

        def rename(self, command: Any) -> str:
            return run(command.model_dump())

    return MemorydMemoryTool()
