"""LoCoMo retrieval through a real daemon: the official evaluator, our socket.

    .venv/bin/python bench/locomo.py [--convs 0-4] [--include-adversarial --ks 5,10,25,50]

`--via remember` replays each turn through memory_remember instead (the relevance
gate, background importance, facts from the first speaker's turns, summaries), waits
for `stats.backlog` to drain after each conversation, and counts a fact in the
results for the turns it was derived from; it prints how many turns the gate
skipped, and why, and how many of those were evidence.

`--daemon-config FILE` gives the daemon a config.yaml (e.g. `embedder: {variant:
int8}`); `--sweep` runs the decay-sweep job after each conversation is written (its
turns are years old, so all are cold: the questions then run against the topic
graph, which grows co-occurrence edges as they go); `--data FILE` runs another set in
LoCoMo's format (`bench/data/memorybank/memorybank-en.json`: MemoryBank's conversations,
see `bench/convert_memorybank.py`); `--reference-time` gives each question the time of its
conversation's last turn as `reference_time` (the evaluator's rule for a time-aware
retriever: "on May 2nd" then means the conversation's May), or the question's own date
where the set has one (LongMemEval's `question_date`: "a week ago" is a week before
it); `--baseline bm25|dense`
runs a reference retriever instead of memoryd (the evaluator's BM25, or dense-only:
cosine over memoryd's own MiniLM, fp32, of "speaker: text"); every other argument goes
to `../shared/bench/locomo/eval_retrieval.py`. A fresh
daemon is started on a temp root for each run; `--keep DIR` keeps it in DIR instead,
and a later run with the same DIR (and `--via`) writes nothing it already wrote: a
ranking change is measured on a long set (LongMemEval's 30,000 turns) in seconds, not
re-embedded for each code version. Only for code that ranks: a change to what is
stored or indexed needs a fresh DIR. Each turn is written with
memory_write: its speaker in the content ("Caroline: ..."), its session as
"<conversation>:<session number>", role user for the conversation's speaker_a (else
for whoever speaks first) and assistant for the other, its time as
`created_at` (the session's date plus its index in seconds, so turns keep their
order), in the scope user:<conversation>. Each question is one
memory_smart_search over that scope with default parameters (top_k = max k).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.protocol import as_utc  # noqa: E402
from memoryd_client import Client, DaemonUnavailable  # noqa: E402

LOCOMO = Path(os.environ.get("LOCOMO_DIR", REPO.parent / "shared" / "bench" / "locomo"))


# --daemon-config FILE, passed on in the environment: the evaluator loads this file
# again as a module of its own, which would not see a global set by main().
CONFIG_ENV = "LOCOMO_DAEMON_CONFIG"
SWEEP_ENV = "LOCOMO_SWEEP"
VIA_ENV = "LOCOMO_VIA"
DATA_ENV = "LOCOMO_DATA"
REFERENCE_ENV = "LOCOMO_REFERENCE_TIME"
KEEP_ENV = "LOCOMO_KEEP"


def data_file() -> Path:
    return Path(os.environ.get(DATA_ENV, LOCOMO / "locomo10.json"))


class DaemonRetriever:
    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="locomo-")
        # --keep DIR: the root lives on in DIR/root, and DIR/written.json records what
        # each conversation wrote; a conversation recorded there is not written again.
        self.keep = Path(kept) if (kept := os.environ.get(KEEP_ENV)) else None
        self.root = (self.keep or Path(self.tmp.name)) / "root"
        self.written: dict[str, Any] = {}
        # The user of each conversation: its speaker_a (LongMemEval's "user", who does
        # not always speak first), else whoever speaks first.
        samples = json.loads(data_file().read_text())
        self.users = {c["sample_id"]: c["conversation"].get("speaker_a", "") for c in samples}
        # A question's own date, where the set has one (LongMemEval's question_date).
        self.asked_at = {(c["sample_id"], q["question"]): q["question_date"]
                         for c in samples for q in c.get("qa", []) if q.get("question_date")}
        if self.keep and (self.keep / "written.json").exists():
            self.written = json.loads((self.keep / "written.json").read_text())
        if (config := os.environ.get(CONFIG_ENV)) and not self.root.exists():
            self.root.mkdir(mode=0o700)
            (self.root / "config.yaml").write_text(Path(config).read_text())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "serve", "--root", str(self.root),
             "--log-level", "warning"], stderr=subprocess.DEVNULL)
        atexit.register(self.close)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.client = Client(self.root / "memory.sock", timeout=600)
                # the socket answers health while start-up still builds the indexes
                if self.client.call("health")["status"] == "ok":
                    break
            except (DaemonUnavailable, OSError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("memoryd did not start")
            time.sleep(0.1)
        self.dia_of: dict[str, str] = {}
        self.via = os.environ.get(VIA_ENV, "write")
        self.derived: dict[str, list[str]] = {}  # fact id -> the dia ids it came from
        self.skipped: dict[str, int] = {}
        self.skipped_evidence = 0
        self.evidence = evidence_ids()
        self.drain_s = 0.0
        self.ingest_s = 0.0
        self.turns = 0
        self.sweep = os.environ.get(SWEEP_ENV) == "1"
        self.sweep_s = 0.0
        self.episodes = 0
        self.reference = os.environ.get(REFERENCE_ENV) == "1"
        self.last_turn: dict[str, str] = {}

    def close(self) -> None:
        if self.turns:
            print(f"ingest through the socket ({self.via}): {self.turns} turns in "
                  f"{self.ingest_s:.1f} s ({self.turns / max(self.ingest_s, 1e-9):.0f} "
                  f"turns/s)", flush=True)
            if self.via == "remember":
                print(f"background backlog drained in {self.drain_s:.1f} s in all; gate "
                      f"skipped {sum(self.skipped.values())} turns {self.skipped}, "
                      f"{self.skipped_evidence} of them evidence; facts learned: "
                      f"{len(self.derived)}", flush=True)
            self.turns = 0
        if self.sweep and self.episodes:
            graph = self.client.call("stats")["graph"]
            print(f"decay-sweep: {self.episodes} turns into episodes in {self.sweep_s:.1f} s;"
                  f" graph after the questions: {graph}", flush=True)
            self.episodes = 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)
        self.tmp.cleanup()

    def ingest(self, conv_id: str, turns: list[dict]) -> None:
        key = f"{self.via}:{conv_id}"
        if key in self.written:  # --keep: written by an earlier run, into this root
            done = self.written[key]
            self.dia_of.update(done["dia_of"])
            self.derived.update(done["derived"])
            self.last_turn[conv_id] = done["last_turn"]
            return
        had = set(self.dia_of)
        had_facts = set(self.derived)
        self._write(conv_id, turns)
        if self.keep:
            self.written[key] = {
                "dia_of": {k: v for k, v in self.dia_of.items() if k not in had},
                "derived": {k: v for k, v in self.derived.items() if k not in had_facts},
                "last_turn": self.last_turn.get(conv_id, "")}
            (self.keep / "written.json").write_text(json.dumps(self.written))

    def _write(self, conv_id: str, turns: list[dict]) -> None:
        started = time.perf_counter()
        first_speaker = self.users.get(conv_id) or (turns[0]["speaker"] if turns else "")
        requests = []
        for turn in turns:
            when = datetime.fromisoformat(turn["timestamp"]) + timedelta(seconds=turn["index"])
            params = {"content": f"{turn['speaker']}: {turn['text']}",
                      "session": f"{conv_id}:{turn['session']}",
                      "role": "user" if turn["speaker"] == first_speaker else "assistant",
                      "scope": f"user:{conv_id}"}
            if self.via == "remember":
                params["timestamp"] = when.isoformat() + "Z"
            else:
                params |= {"source": "locomo", "created_at": when.isoformat() + "Z"}
            requests.append({"id": turn["id"], "method": f"memory_{self.via}",
                             "params": params})
            self.last_turn[conv_id] = when.isoformat() + "Z"
        sock: socket.socket = self.client._sock
        for start in range(0, len(requests), 64):  # pipelined in windows
            window = requests[start:start + 64]
            sock.sendall(b"".join(json.dumps(r).encode() + b"\n" for r in window))
            for _ in window:
                reply = self.client.read_message()
                if "error" in reply:
                    raise SystemExit(f"write failed: {reply['error']}")
                result = reply["result"]
                if result.get("stored", True):
                    self.dia_of[result["id"]] = reply["id"]
                    continue
                reason = result["skipped"]["reason"]
                self.skipped[reason] = self.skipped.get(reason, 0) + 1
                self.skipped_evidence += (conv_id, reply["id"]) in self.evidence
        self.ingest_s += time.perf_counter() - started
        self.turns += len(turns)
        if self.via == "remember":
            started = time.perf_counter()
            while self.client.call("stats")["backlog"]:
                time.sleep(0.2)
            self.drain_s += time.perf_counter() - started
            facts: list[dict] = []
            while True:
                page = self.client.call("memory_list", {"scope": f"user:{conv_id}",
                                                        "limit": 1000,
                                                        "offset": len(facts)})["memories"]
                facts += page
                if len(page) < 1000:
                    break
            for fact in facts:
                if fact["kind"] == "fact":
                    self.derived[fact["id"]] = [self.dia_of[t] for t in fact["derived_from"]
                                                if t in self.dia_of]
        if self.sweep:
            started = time.perf_counter()
            report = self.client.call("jobs/run", {"job": "decay-sweep"})
            if report["error"]:
                raise SystemExit(f"decay-sweep failed: {report['error']}")
            self.sweep_s += time.perf_counter() - started
            self.episodes += sum(c["action"] == "episode" for c in report["changes"])

    def asking(self, conv_id: str, question: str) -> dict[str, str]:
        """A question's params: its conversation's scope, and with `--reference-time`
        the question's own date as its reference when the set gives one
        (`question_date`), else the conversation's last turn."""
        params = {"query": question, "scope": f"user:{conv_id}"}
        if self.reference:
            asked = self.asked_at.get((conv_id, question))
            if asked is None:
                params["reference_time"] = self.last_turn[conv_id]
            else:
                params["reference_time"] = as_utc(asked)
        return params

    def retrieve(self, conv_id: str, question: str, k: int) -> list[str]:
        result = self.client.call("memory_smart_search",
                                  self.asking(conv_id, question) | {"top_k": k})
        out: list[str] = []
        for m in result["memories"]:  # a fact counts for the turns it was learned from
            out += [self.dia_of[m["id"]]] if m["id"] in self.dia_of else self.derived.get(
                m["id"], [])
        return out


def evidence_ids() -> set[tuple[str, str]]:
    """(conversation, dia id) of every turn some question names as evidence."""
    data = json.loads(data_file().read_text())
    out: set[tuple[str, str]] = set()
    for conv in data:
        for qa in conv.get("qa", []):
            out.update((conv["sample_id"], e) for e in qa.get("evidence", []))
    return out


def make_retriever() -> DaemonRetriever:
    return DaemonRetriever()


def make_dense() -> Any:
    """Dense-only: the evaluator's cosine retriever over memoryd's MiniLM (fp32)."""
    from memoryd.models.embedder import OnnxEmbedder

    embedder = OnnxEmbedder(threads=2)
    return load_evaluator().DenseRetriever(lambda texts: embedder.embed(list(texts)))


def load_evaluator() -> Any:
    """The official evaluator (`eval_retrieval.py` beside the data), as a module."""
    spec = importlib.util.spec_from_file_location("eval_retrieval", LOCOMO / "eval_retrieval.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no evaluator at {LOCOMO} (set LOCOMO_DIR)")
    evaluator = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(LOCOMO))
    spec.loader.exec_module(evaluator)
    return evaluator


def main() -> None:
    evaluator = load_evaluator()
    args = list(sys.argv[1:])
    if "--daemon-config" in args:
        at = args.index("--daemon-config")
        os.environ[CONFIG_ENV] = str(Path(args[at + 1]).resolve())
        del args[at:at + 2]
    if "--via" in args:
        at = args.index("--via")
        if args[at + 1] not in ("write", "remember"):
            raise SystemExit("--via takes write or remember")
        os.environ[VIA_ENV] = args[at + 1]
        del args[at:at + 2]
    if "--sweep" in args:
        os.environ[SWEEP_ENV] = "1"
        args.remove("--sweep")
    if "--data" in args:
        at = args.index("--data")
        os.environ[DATA_ENV] = str(Path(args[at + 1]).resolve())
        del args[at:at + 2]
    if "--reference-time" in args:
        os.environ[REFERENCE_ENV] = "1"
        args.remove("--reference-time")
    if "--keep" in args:
        at = args.index("--keep")
        keep = Path(args[at + 1]).resolve()
        keep.mkdir(parents=True, exist_ok=True)
        os.environ[KEEP_ENV] = str(keep)
        del args[at:at + 2]
    retriever = f"{Path(__file__).resolve()}:make_retriever"
    if "--baseline" in args:
        at = args.index("--baseline")
        choice = args[at + 1]
        if choice not in ("bm25", "dense"):
            raise SystemExit("--baseline takes bm25 or dense")
        retriever = "bm25" if choice == "bm25" else f"{Path(__file__).resolve()}:make_dense"
        del args[at:at + 2]
    evaluator.main(["--data", str(data_file()), "--retriever", retriever, *args])


if __name__ == "__main__":
    main()
