# Sourced by scripts/serve and scripts/test: make .venv with Python 3.11+ and install
# the project into it (with the extras named in $EXTRAS). Needs only python3 and PyPI.
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
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$spec"
