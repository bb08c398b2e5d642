# Sourced by scripts/serve and scripts/test: make .venv with Python 3.11+ and install
# the project into it (with the extras named in $EXTRAS). Needs only python3 and PyPI.
# A stamp of pyproject.toml and the extras skips the install when nothing changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "memoryd needs Python 3.11 or newer; '$PY' is $("$PY" --version 2>&1). Set PYTHON=..." >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $("$PY" --version)" >&2
  "$PY" -m venv .venv
fi
spec="."
[ -n "${EXTRAS:-}" ] && spec=".[${EXTRAS}]"
stamp=".venv/.memoryd-installed"
want="$(cat pyproject.toml; echo "extras=${EXTRAS:-}")"
have="$(cat "$stamp" 2>/dev/null || true)"
# A stamp with the test extras also covers a plain install.
if [ "$have" != "$want" ] && [ "$have" != "$(cat pyproject.toml; echo "extras=test")" ]; then
  echo "installing memoryd${EXTRAS:+ [$EXTRAS]} and its dependencies into .venv" \
       "(the first time takes a few minutes: onnxruntime, chromadb, the model)" >&2
  set +e
  .venv/bin/python -m pip install --disable-pip-version-check -e "$spec" 2>&1 \
    | tee .venv/pip.log | grep --line-buffered -E "^(Collecting|Installing|Successfully)" >&2
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    tail -20 .venv/pip.log >&2
    echo "installing failed (the whole log: .venv/pip.log)" >&2
    exit 1
  fi
  printf '%s' "$want" > "$stamp"
fi
# The project is installed editable: its bytecode is compiled here, not at each start
# (a daemon compiles its modules in about 0.5 s of CPU when no .pyc is kept, as with
# PYTHONDONTWRITEBYTECODE set; the test suite starts some 150 daemons). Up-to-date files
# are skipped, so this costs little when nothing changed.
.venv/bin/python -m compileall -q -j 0 memoryd clients
