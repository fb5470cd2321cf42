#!/usr/bin/env bash
# Build Hardware Explorer as a one-folder Linux application: dist/hwexplorer/hwexplorer (docs/packaging.md).
#
#     packaging/build_linux.sh            from the repository root (or anywhere: it cd's there)
#
# Uses the project's .venv (python3 dev.py test creates it); installs the pinned PyInstaller into it if
# missing, then runs packaging/hwexplorer.spec. Then check the result with packaging/smoke_test.sh.
set -euo pipefail

PYINSTALLER_VERSION="6.22.3"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"

if [[ ! -x "$PY" ]]; then
    echo "build_linux.sh: no .venv: run 'python3 dev.py test' (or create .venv and pip install -e .) first" >&2
    exit 2
fi
installed="$("$PY" -c 'import PyInstaller; print(PyInstaller.__version__)' 2>/dev/null || true)"
if [[ "$installed" != "$PYINSTALLER_VERSION" ]]; then
    echo "installing pyinstaller==$PYINSTALLER_VERSION into .venv ..."
    "$PY" -m pip install --quiet "pyinstaller==$PYINSTALLER_VERSION"
fi
# The bundle reads its version from the installed metadata: make sure the app itself is installed.
if ! "$PY" -c 'import importlib.metadata as m; m.version("hardware-explorer")' 2>/dev/null; then
    "$PY" -m pip install --quiet -e .
fi

mkdir -p "$ROOT/build/pyinstaller"
LOG="$ROOT/build/pyinstaller/build.log"
start=$(date +%s)
"$PY" -m PyInstaller --noconfirm --clean --log-level WARN --distpath "$ROOT/dist" \
    --workpath "$ROOT/build/pyinstaller" "$ROOT/packaging/hwexplorer.spec" 2>&1 | tee "$LOG"
end=$(date +%s)

# Qt's X11 plugin needs the xcb helper libraries; PyInstaller bundles them only when the build machine has
# them (the bundle then runs on desktops without them). libgtk-3 (the optional GTK theme plugin) may be missing.
if grep -E "could not resolve '(libxcb|libxkbcommon)" "$LOG" >&2; then
    echo "build_linux.sh: install the libraries above and build again, e.g. apt-get install libxcb-cursor0" \
         "libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-shape0 libxcb-randr0" \
         "libxcb-xinerama0 libxcb-xkb1 libxkbcommon-x11-0" >&2
    exit 1
fi

# PyInstaller only warns about a module of the app it could not compile (a syntax error): the bundle would
# then fail when that module is imported. Refuse such a build.
WARN="$ROOT/build/pyinstaller/hwexplorer/warn-hwexplorer.txt"
if grep -E "^(invalid|missing) module named explorer" "$WARN"; then
    echo "build_linux.sh: the app's own modules above could not be bundled (see $WARN)" >&2
    exit 1
fi

APP="$ROOT/dist/hwexplorer"
echo "built $APP/hwexplorer in $((end - start)) s; size $(du -sh "$APP" | cut -f1)"
"$APP/hwexplorer" --version
