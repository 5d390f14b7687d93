#!/usr/bin/env bash
# What of a reference run is committed: tools/keep-reference.sh RUN_DIR DEST [--data-report]
#   RUN_DIR  a finished run folder (e.g. unpacked from tools/h200-run.sh reference's tar.xz)
#   DEST     outputs/reference/<name> (replaced)
# Kept: manifest.json, status/, data/, report/index.html (rendered again for what is kept, with
# report/CLAIMS.md) and report/*.csv, share/summary.md and
# share/figures/, advise/ (where the run has one) as tools/keep-advise.sh trims it (without each timed
# process's raw output or the designs' replay). --data-report keeps only manifest.json, status/,
# data/ and report/ (index and CSVs), as a second reference does, and of advise/ (a second sample of
# its predictions) the predictions, real times and advice, not the traces. Left out always: the executed
# notebooks, the per-notebook report pages and figures/ (together about 10 MB a run: with them, two
# references and what a device call carries exceed what one call may take) and the share zip.
# The run folder's paths are spelled here again (a shell script); lib/pinpath/layout.py's LAYOUT is
# where they are named: change both together.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/keep-reference.sh RUN_DIR DEST [--data-report]" >&2; exit 2; }
src=$1 dest=$2 only=${3:-}
[ -f "$src/manifest.json" ] || { echo "keep-reference: $src has no manifest.json: not a run folder" >&2; exit 2; }
rm -rf "$dest"
mkdir -p "$dest/report"
cp -r "$src/manifest.json" "$src/status" "$src/data" "$dest/"
cp "$src/report/index.html" "$src"/report/*.csv "$dest/report/"
if [ "$only" != "--data-report" ]; then
  mkdir -p "$dest/share"
  cp -r "$src/share/summary.md" "$src/share/figures" "$dest/share/"
fi
# advise/ (where the run has one), trimmed as tools/keep-advise.sh trims it
[ -d "$src/advise" ] && "$(dirname "$0")/keep-advise.sh" "$src/advise" "$dest" "$only"
# where another reference sits beside it, the why of each claim whose verdict the two give differently
# says so, in both (report.regress.note_references); then the index again for what is kept (and for a
# reference whose claims.csv the note changed): no link to a page left out, a notice of what was, its
# CLAIMS.md copy
PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)/lib${PYTHONPATH:+:$PYTHONPATH}" "${PYTHON:-python3}" -c '
import json, sys
from pathlib import Path
from pinpath.report.html import render_index
from pinpath.report.regress import note_references
d = Path(sys.argv[1])
for r in dict.fromkeys([d, *note_references(d)]):
    render_index(r, json.loads((r / "manifest.json").read_text()))
    print(f"keep-reference: {r}: claims.csv and index.html written")' "$dest"
du -sh "$dest"
