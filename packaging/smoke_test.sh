#!/usr/bin/env bash
# Smoke test of the built one-folder app (dist/hwexplorer/, from packaging/build_linux.sh). docs/packaging.md.
#
#     packaging/smoke_test.sh [--screenshot PATH] [--keep]
#
# Everything runs from the bundle with an empty HOME and XDG folders (first start: the catalog database is
# created, migrated and seeded from the bundled catalog/), and without the source tree's environment overrides.
#   1. `hwexplorer --version` prints the version in pyproject.toml (read from the bundled package metadata);
#   2. headless: `catalog validate` passes on the bundled catalog, `catalog list --json` has every device file,
#      `analyze gpt2` and `analyze llama2-7b` on 8 devices --json give the published parameter counts and a
#      positive time and energy on every device; `report` writes a PDF (when the build has that command); an
#      ONNX model is imported (when .venv has onnx to write one); a bad template id exits 2 with one line;
#   3. GUI (on $DISPLAY, else a private Xvfb): the window appears; with the keyboard only, File > New from
#      Template > Llama-2-7B, File > Save As (the saved file must hold the template's model), then File > Open of
#      that project with 8 devices added: the window title must name it, the panels draw; screenshots of the
#      screen and of the window (default build/smoke/packaged-app.png) must not be blank; Help > About opens; Ctrl+Q
#      closes the app with exit status 0 and nothing on stderr that looks like a traceback.
# Needs: xdotool, ImageMagick (import, identify), python3 (reads the JSON), Xvfb when there is no display.
# Exit status 0 = pass; anything else = fail, with the reason and the folder holding the logs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP="$ROOT/dist/hwexplorer/hwexplorer"
SHOT="$ROOT/build/smoke/packaged-app.png"
KEEP=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --screenshot) SHOT="$(realpath -m "$2")"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        *) echo "usage: $0 [--screenshot PATH] [--keep]" >&2; exit 2 ;;
    esac
done
DEVICES=(nvidia-h100-sxm5 nvidia-a100-sxm4-80gb nvidia-h200-sxm nvidia-b200 amd-mi300x aws-trainium2 nvidia-l40s
         qualcomm-cloud-ai100-std)
PY="${PYTHON:-python3}"

for tool in xdotool import identify "$PY"; do
    command -v "$tool" >/dev/null || { echo "smoke_test: needs $tool (apt-get install xdotool imagemagick python3)" >&2; exit 2; }
done
[[ -x "$APP" ]] || { echo "smoke_test: no $APP: run packaging/build_linux.sh first" >&2; exit 2; }

WORK="$(mktemp -d /tmp/hwx-smoke.XXXXXX)"
APP_PID="" XVFB_PID="" PASSED=0
cleanup() {
    [[ -n "$APP_PID" ]] && kill "$APP_PID" 2>/dev/null || true
    [[ -n "$XVFB_PID" ]] && kill "$XVFB_PID" 2>/dev/null || true
    if [[ $PASSED == 1 && $KEEP == 0 ]]; then rm -rf "$WORK"; else echo "smoke_test: logs and files in $WORK" >&2; fi
}
trap cleanup EXIT
fail() { echo "smoke_test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# An isolated first start: nothing from the user's folders or the developer's environment.
mkdir -p "$WORK/home" "$WORK/runtime" && chmod 700 "$WORK/runtime"
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_DATA_HOME="$WORK/home/.local/share"
export XDG_CACHE_HOME="$WORK/home/.cache" XDG_RUNTIME_DIR="$WORK/runtime"
unset HWEXPLORER_DB HWEXPLORER_CATALOG_DIR HWEXPLORER_RESOURCES QT_QPA_PLATFORM PYTHONPATH
# Qt's own widgets and file dialogs on X11 (xdotool drives X11 only; a desktop's theme would bring native dialogs)
unset WAYLAND_DISPLAY QT_QPA_PLATFORMTHEME XDG_CURRENT_DESKTOP DESKTOP_SESSION GNOME_DESKTOP_SESSION_ID KDE_FULL_SESSION
cd "$WORK"

# ---------------------------------------------------------------------------------------------- 1. version
step "version"
expected="$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
got="$("$APP" --version)"
[[ "$got" == "hwexplorer $expected" ]] || fail "--version printed '$got', expected 'hwexplorer $expected'"
echo "$got"

# ---------------------------------------------------------------------------------------------- 2. headless
step "catalog validate / list (bundled catalog)"
"$APP" catalog validate > validate.txt 2>&1 || { cat validate.txt; fail "catalog validate failed on the bundled catalog"; }
"$APP" catalog list --json > list.json || fail "catalog list --json failed"
n_files=$(find "$ROOT/catalog" -maxdepth 1 -name '*.yaml' | wc -l)
"$PY" - "$n_files" <<'EOF' || fail "catalog list does not match catalog/"
import json, sys
rows = json.load(open("list.json"))
rows = rows.get("devices", rows) if isinstance(rows, dict) else rows
assert len(rows) == int(sys.argv[1]), f"{len(rows)} devices listed, {sys.argv[1]} files in catalog/"
print(f"{len(rows)} devices in the bundled catalog")
EOF

step "analyze gpt2 and llama2-7b (8 devices) --json"
"$APP" analyze gpt2 --device nvidia-h100-sxm5 --json > gpt2.json || fail "analyze gpt2 failed"
dev_args=(); for d in "${DEVICES[@]}"; do dev_args+=(--device "$d"); done
start=$(date +%s.%N)
"$APP" analyze llama2-7b "${dev_args[@]}" --json > llama.json || fail "analyze llama2-7b failed"
end=$(date +%s.%N)
"$PY" - "${DEVICES[@]}" <<'EOF' || fail "the analysis JSON is wrong"
import json, sys
def check(path, params, ids):
    data = json.load(open(path))
    assert data["model"]["params"] == params, f"{path}: params {data['model']['params']} != {params}"
    got = [r["device"]["id"] for r in data["results"]]
    assert got == ids, f"{path}: devices {got} != {ids}"
    for r in data["results"]:
        t = r["totals"]
        assert r["layers"], f"{path}: {r['device']['id']}: no layers"
        assert t["time_s"] and t["time_s"] > 0, f"{path}: {r['device']['id']}: time_s {t['time_s']}"
        assert t["energy_j"] and t["energy_j"] > 0, f"{path}: {r['device']['id']}: energy_j {t['energy_j']}"
    return data
check("gpt2.json", 124_439_808, ["nvidia-h100-sxm5"])
d = check("llama.json", 6_738_415_616, sys.argv[1:])
for r in d["results"]:
    print(f"  {r['device']['id']:<26} {r['totals']['time_s'] * 1e3:8.2f} ms/token  {r['totals']['energy_j']:7.3f} J")
EOF
echo "llama2-7b on ${#DEVICES[@]} devices: $(echo "$end - $start" | bc) s including start-up"

step "report (PDF) and ONNX import"
if "$APP" report --help > /dev/null 2>&1; then
    "$APP" report llama2-7b "${dev_args[@]}" --out report.pdf > report.out || fail "report --out report.pdf failed"
    [[ "$(head -c 5 report.pdf)" == "%PDF-" && $(stat -c %s report.pdf) -gt 10000 ]] || fail "report.pdf is not a PDF"
    echo "report.pdf: $(stat -c %s report.pdf) bytes"
else
    echo "(this build has no 'report' command: PDF report not checked)"
fi
VENV_PY="$ROOT/.venv/bin/python"
if [[ -x "$VENV_PY" ]] && "$VENV_PY" -c "import onnx" 2>/dev/null; then
    "$VENV_PY" - <<'EOF'
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
weight = numpy_helper.from_array(np.ones((64, 32), np.float32), "W")
graph = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])], [weight])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), "tiny.onnx")
EOF
    "$APP" analyze tiny.onnx --device nvidia-h100-sxm5 --json > onnx.json || fail "analyze tiny.onnx failed"
    "$PY" -c 'import json; m = json.load(open("onnx.json"))["model"]; assert m["macs"] == 64 * 32, m; print("ONNX:", m)' \
        || fail "the ONNX model was read wrongly"
else
    echo "(no .venv with onnx to write a test model: ONNX import not checked)"
fi

step "bad input"
set +e; "$APP" analyze no-such-template --device nvidia-h100-sxm5 > bad.out 2> bad.err; rc=$?; set -e
[[ $rc == 2 && $(wc -l < bad.err) == 1 ]] || fail "a bad template id gave exit $rc and: $(cat bad.err)"
# The menu lists the templates in the order of this message: find Llama-2-7B's place in it.
template_index=$("$PY" -c 'import sys; known = open("bad.err").read().split("known:")[1]; print([t.strip() for t in known.split(",")].index("llama2-7b"))')

# ---------------------------------------------------------------------------------------------- 3. GUI
step "GUI"
if [[ -z "${DISPLAY:-}" ]]; then
    command -v Xvfb >/dev/null || fail "no DISPLAY and no Xvfb (apt-get install xvfb)"
    exec 3>"$WORK/display"
    Xvfb -displayfd 3 -screen 0 1600x1000x24 -nolisten tcp > xvfb.log 2>&1 &
    XVFB_PID=$!
    for _ in $(seq 50); do [[ -s "$WORK/display" ]] && break; sleep 0.1; done
    exec 3>&-
    [[ -s "$WORK/display" ]] || fail "Xvfb did not start: $(cat xvfb.log)"
    export DISPLAY=":$(head -1 "$WORK/display")"
    echo "started Xvfb on $DISPLAY"
fi

# xdotool search --sync aborts on a BadWindow error when a window closes while it looks: poll instead.
find_window() {  # NAME-REGEX TIMEOUT-S -> window id on stdout
    local deadline=$(( $(date +%s) + $2 )) id
    while (( $(date +%s) < deadline )); do
        id=$(xdotool search --onlyvisible --name "$1" 2>/dev/null | head -1 || true)
        [[ -n "$id" ]] && { echo "$id"; return 0; }
        [[ -n "$APP_PID" ]] && ! kill -0 "$APP_PID" 2>/dev/null && return 1
        sleep 0.1
    done
    return 1
}
keys() { xdotool windowfocus --sync "$MAIN" 2>/dev/null || true; xdotool key --delay 200 "$@"; }
type_in_dialog() {  # DIALOG-TITLE-REGEX PATH: the file dialog opens with its name field focused
    find_window "$1" 10 > /dev/null || fail "no '$1' dialog"
    sleep 0.5
    xdotool key ctrl+a && xdotool type --delay 15 "$2" && xdotool key Return
}

start=$(date +%s.%N)
QT_QPA_PLATFORM=xcb "$APP" > app.out 2> app.err &
APP_PID=$!
MAIN=$(find_window "Hardware Explorer" 60) || fail "no window within 60 s: $(tail -5 app.err)"
end=$(date +%s.%N)
echo "window up after $(echo "$end - $start" | bc) s (first start: creates and seeds the catalog database)"
sleep 1

# File > New from Template > Llama-2-7B, by keyboard (the submenu opens with its first entry highlighted).
down=(); for _ in $(seq "$template_index"); do down+=(Down); done
keys alt+f t "${down[@]}" Return
sleep 1
keys ctrl+shift+s
type_in_dialog "Save project as" "$WORK/from-template.hwproj"
find_window "^from-template.hwproj" 10 > /dev/null || fail "the window title does not name the saved project"
"$PY" - "$WORK/from-template.hwproj" "${DEVICES[@]}" <<'EOF' || fail "the project saved after New from Template is wrong"
import json, sys
data = json.load(open(sys.argv[1]))
assert data["model"]["name"] == "Llama-2-7B", data["model"]["name"]
assert data["assumptions"]["phase"] == "decode", data["assumptions"]
data["devices"] = sys.argv[2:]  # compare the template on 8 catalog devices
json.dump(data, open("llama2-7b-8-devices.hwproj", "w"), indent=2)
print("saved from the template menu: Llama-2-7B, decode")
EOF

keys ctrl+o
type_in_dialog "Open project" "$WORK/llama2-7b-8-devices.hwproj"
MAIN=$(find_window "^llama2-7b-8-devices.hwproj" 10) || fail "the window title does not name the opened project"
sleep 3  # the panels draw the analysis
mkdir -p "$(dirname "$SHOT")"
import -window root "$WORK/screen.png"  # the whole screen, kept with the logs
import -window "$MAIN" "$SHOT"          # the main window alone, for docs/screenshots
for png in "$WORK/screen.png" "$SHOT"; do
    colours=$(identify -format "%k" "$png")
    (( colours > 200 )) || fail "the screenshot looks blank ($colours colours): $png"
done
echo "screenshot: $SHOT ($(identify -format "%wx%h, %k colours" "$SHOT"))"
echo "resident memory of the app with the project open: $(awk '/^VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$APP_PID/status")"

keys F1
ABOUT=$(find_window "About Hardware Explorer" 10) || fail "Help > About did not open"
import -window root "$WORK/about.png"
xdotool windowfocus --sync "$ABOUT" 2>/dev/null || true
xdotool key Escape
sleep 0.5

keys ctrl+q
for _ in $(seq 150); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$APP_PID" 2>/dev/null && fail "the app did not quit on Ctrl+Q"
set +e; wait "$APP_PID"; rc=$?; set -e
APP_PID=""
[[ $rc == 0 ]] || fail "the app exited with status $rc: $(tail -5 app.err)"
if grep -q "Traceback" app.err; then fail "the app printed a traceback: $(cat app.err)"; fi
[[ -s app.err ]] && { echo "app stderr:"; sed 's/^/  /' app.err; }

PASSED=1
echo "smoke_test: PASS"
