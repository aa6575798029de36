# Shared by scripts/demo and scripts/test: make .venv once and install the project into it.
# Usage: source scripts/_venv.sh EXTRA   (EXTRA is "embedded" for the demo, "test" for the tests)
#
# The first run says what it installs and roughly how long that takes; pip's own output goes to
# .venv/install.log and is shown only when the install fails. PYTHON=/path/to/python picks the
# interpreter; a .venv made with another one is made again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || {
  echo "genkit_sessions needs Python 3.10 or newer; set PYTHON=/path/to/python3.10+ (PYTHON is now '$python')" >&2
  exit 1
}
venv="$root/.venv"
extra="${1:-}"
stamp="$venv/.installed-${extra:-core}"
# The interpreter's identity: its resolved path and its version.
wanted="$("$python" -c 'import os, sys; print(os.path.realpath(sys.executable), sys.version.split()[0])')"
made_with="$venv/.made-with"
if [ -x "$venv/bin/python" ] && [ -n "${PYTHON:-}" ]; then
  if [ ! -f "$made_with" ] || [ "$(cat "$made_with")" != "$wanted" ]; then
    echo "scripts: .venv was made with $(cat "$made_with" 2>/dev/null || echo 'another interpreter'); PYTHON names $wanted: making it again" >&2
    rm -rf "$venv"
  fi
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "scripts: making .venv with $wanted" >&2
  "$python" -m venv "$venv"
  echo "$wanted" > "$made_with"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  case "$extra" in
    test) what="the project and its test tools (pytest, moto, mypy, ruff, genkit)"; took="3 to 8 minutes, depending on the network and the machine" ;;
    embedded) what="the project and an embedded DynamoDB (moto)"; took="1 to 4 minutes, depending on the network and the machine" ;;
    *) what="the project"; took="under a minute" ;;
  esac
  echo "scripts: installing $what into .venv; the first time takes $took, later runs start at once" >&2
  log="$venv/install.log"
  started=$SECONDS
  (
    # Only for the install: pip's and setuptools' notices stay in the log.
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_WARN_SCRIPT_LOCATION=1 PYTHONWARNINGS=ignore
    "$venv/bin/python" -m pip install --upgrade pip
    if [ -n "$extra" ]; then
      "$venv/bin/python" -m pip install -e ".[$extra]"
    else
      "$venv/bin/python" -m pip install -e .
    fi
  ) > "$log" 2>&1 || {
    echo "scripts: the install failed; pip said:" >&2
    tail -n 40 "$log" >&2
    echo "scripts: full log in $log; fix the cause (often the network or the Python version) and run again" >&2
    exit 1
  }
  touch "$stamp"
  echo "scripts: installed in $((SECONDS - started)) s (pip's log: .venv/install.log)" >&2
fi
export PATH="$venv/bin:$PATH"
