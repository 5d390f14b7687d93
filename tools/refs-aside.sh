#!/usr/bin/env bash
# The committed references out of the tree for a device call, and back after it:
#   tools/refs-aside.sh out HOLD    outputs/reference/<name>/ -> HOLD/<name>/, each one's manifest.json left
#   tools/refs-aside.sh back HOLD   HOLD/<name>/ -> outputs/reference/<name>/ where only that manifest is there
# A call carries the working tree and its carry paths, 64 MiB in all: the references (about 33 MB), the
# wheelhouse and build/offload together exceed it. The manifests stay because `--stop-by` (the
# reference step's STOP_BY) reads each notebook's earlier times from them: without them it has none
# and starts every notebook, so a slow machine's limit cuts the last one half run. A run on the
# reference's platform reads nothing else of a reference (report.html.claims_table.reference_verdicts).
# `back` leaves a held reference in HOLD where outputs/reference/<name> holds more than the manifest
# (a new reference kept there since, tools/keep-reference.sh): the new one is not overwritten.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
[ $# = 2 ] || { echo "usage: tools/refs-aside.sh out|back HOLD" >&2; exit 2; }
how=$1 hold=$2
case $how in
  out)
    mkdir -p "$hold"
    for ref in outputs/reference/*/; do
      name=$(basename "$ref")
      [ -f "$ref/manifest.json" ] || continue
      [ -e "$hold/$name" ] && { echo "refs-aside: $hold/$name exists: not overwritten" >&2; exit 1; }
      mv "$ref" "$hold/$name"
      mkdir -p "$ref" && cp "$hold/$name/manifest.json" "$ref/"
      echo "refs-aside: $name -> $hold/$name (manifest.json left)"
    done
    ;;
  back)
    held_refs=("$hold"/*/)
    [ ${#held_refs[@]} -gt 0 ] || { echo "refs-aside: $hold holds no reference: nothing put back" >&2; exit 1; }
    for held in "${held_refs[@]}"; do
      name=$(basename "$held"); ref=outputs/reference/$name
      if [ -d "$ref" ] && { [ "$(ls -A "$ref")" != manifest.json ] || ! cmp -s "$ref/manifest.json" "$held/manifest.json"; }; then
        echo "refs-aside: $ref holds more than the held manifest: $held left where it is"
        continue
      fi
      rm -rf "$ref" && mv "$held" "$ref"
      echo "refs-aside: $name back"
    done
    ;;
  *) echo "refs-aside: out or back, not $how" >&2; exit 2 ;;
esac
