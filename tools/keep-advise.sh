#!/usr/bin/env bash
# What of an advise step's folder a reference keeps: tools/keep-advise.sh ADVISE_DIR DEST [--data-report]
#   ADVISE_DIR  an advise step's folder (tools/h200-run.sh advise's tar.xz unpacked, or a run's advise/)
#   DEST        outputs/reference/<name>: its advise/ is replaced, nothing else of it is touched
# Left out: each timed process's raw .out/.err and the designs' replay (designs_replay.csv; about 11 MB).
# --data-report (a second reference): the predictions, real times and advice only, not the traces
# (*.info, pattern/, replay.csv). tools/keep-reference.sh keeps a run's advise/ through this; alone, it
# replaces a reference's advise/ by another advise step's of the same sources (where the step before the
# run failed or was cut short): its PROVENANCE.md says which call measured it. A change to lib/ still
# means the whole reference is measured again, never its advise/ alone.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/keep-advise.sh ADVISE_DIR DEST [--data-report]" >&2; exit 2; }
src=$1 dest=$2 only=${3:-}
[ -f "$src/prediction.csv" ] || { echo "keep-advise: $src has no prediction.csv: not an advise step's folder" >&2; exit 2; }
[ -d "$dest" ] || { echo "keep-advise: $dest is not a folder" >&2; exit 2; }
# the folder it replaces is never the one it keeps, nor holds it
case "$(realpath "$src")/" in
  "$(realpath "$dest")/advise/"*) echo "keep-advise: $src is $dest's own advise/: nothing to replace it with" >&2; exit 2 ;;
esac
rm -rf "$dest/advise"
cp -r "$src" "$dest/advise"
find "$dest/advise" -maxdepth 1 -type f \( -name "*.out" -o -name "*.err" \) -delete
rm -f "$dest"/advise/*/designs_replay.csv
if [ "$only" = "--data-report" ]; then
  find "$dest/advise" -maxdepth 1 -type f -name "*.info" -delete
  rm -rf "$dest"/advise/*/pattern "$dest"/advise/*/replay.csv
fi
