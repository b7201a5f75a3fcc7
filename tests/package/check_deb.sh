#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` in the build folder makes it, it unpacks into a staging root
# with the programs, the GPU specs, the desktop entry and the icon, its control file names its
# dependencies, and its CLI and explorer run from the staging root (the CLI plans a sample model
# with the installed GPU specs; the explorer, offscreen, plans it and writes a screenshot).
#   check_deb.sh BUILD_DIR SOURCE_DIR [gui]
set -euo pipefail
build=$1
src=$2
gui=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

(cd "$build" && cpack -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/*.deb 2> /dev/null | head -1)
[[ -n $deb ]] || fail "no .deb in $work/pkg"
echo "package: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

info=$(dpkg-deb -I "$deb")
grep -q "^ Package: souffle-explorer" <<< "$info" || fail "control file: no Package: souffle-explorer"
grep -q "^ Depends: .*libprotobuf" <<< "$info" || fail "control file: Depends lacks libprotobuf"
if [[ $gui == gui ]]; then
  grep -q "^ Depends: .*libqt6widgets6" <<< "$info" || fail "control file: Depends lacks Qt 6 Widgets"
fi

stage=$work/stage
dpkg-deb -x "$deb" "$stage"
want=(usr/bin/souffle-cli usr/bin/souffle-runner usr/share/souffle/gpus.json
      usr/share/doc/souffle-explorer/README.md)
if [[ $gui == gui ]]; then
  want+=(usr/bin/souffle-explorer usr/share/applications/souffle-explorer.desktop
         usr/share/icons/hicolor/scalable/apps/souffle-explorer.svg)
fi
for f in "${want[@]}"; do
  [[ -f $stage/$f ]] || fail "the package lacks /$f"
done
echo "files: ${#want[@]} checked"

# The installed specs are the ones read: a spec file named in the staging root is found there.
"$stage/usr/bin/souffle-cli" plan "$src/sample_models/mmoe/model.onnx" --gpu a100 --json \
  > "$work/plan.json" || fail "the staged souffle-cli could not plan the sample model"
grep -q '"kernels"' "$work/plan.json" || fail "the staged souffle-cli printed no plan"
"$stage/usr/bin/souffle-cli" verify "$src/sample_models/mmoe/model.onnx" > /dev/null ||
  fail "the staged souffle-cli could not verify the sample model"
printf '%s\n' '{"id":1,"op":"hello","protocol":1}' '{"id":2,"op":"quit"}' | "$stage/usr/bin/souffle-runner" --backend emulator \
  > "$work/hello.txt" 2>&1 || true
grep -q '"protocol"' "$work/hello.txt" || fail "the staged souffle-runner did not answer hello: $(head -c 300 "$work/hello.txt")"
echo "cli and runner: ran from the staging root"

# The souffle Python module, where the build made it, for Debian's python3 (docs/python.md).
if [[ -d $build/python/souffle ]]; then
  py=$stage/usr/lib/python3/dist-packages
  ls "$py"/souffle/_core*.so > /dev/null 2>&1 || fail "the package lacks the souffle Python module"
  PYTHONPATH=$py /usr/bin/python3 -c "import souffle, sys; p = souffle.load(sys.argv[1]).plan(); assert p.kernels" \
    "$src/sample_models/mmoe/model.onnx" || fail "the staged souffle Python module could not plan"
  echo "python: the staged module planned the sample model"
fi

if [[ $gui == gui ]]; then
  QT_QPA_PLATFORM=offscreen timeout 300 "$stage/usr/bin/souffle-explorer" \
    "$src/sample_models/mmoe/model.onnx" --size 800x600 --screenshot "$work/shot.png" \
    > "$work/explorer.log" 2>&1 || { cat "$work/explorer.log" >&2; fail "the staged explorer failed"; }
  [[ -s $work/shot.png ]] || fail "the staged explorer wrote no screenshot"
  grep -q "^Exec=souffle-explorer" "$stage/usr/share/applications/souffle-explorer.desktop" ||
    fail "the desktop entry does not start souffle-explorer"
  echo "explorer: planned and wrote a screenshot from the staging root"
fi
echo "PASS"
