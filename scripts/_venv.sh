# Shared by scripts/demo and scripts/test: make .venv once and install the project into it.
# Usage: source scripts/_venv.sh EXTRA   (EXTRA is "embedded" for the demo, "test" for the tests)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "genkit_sessions needs Python 3.10 or newer; set PYTHON=/path/to/python3.10+" >&2
  exit 1
}
venv="$root/.venv"
stamp="$venv/.installed-${1:-core}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  if [ -n "${1:-}" ]; then
    "$venv/bin/python" -m pip install --quiet -e ".[$1]"
  else
    "$venv/bin/python" -m pip install --quiet -e .
  fi
  touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
