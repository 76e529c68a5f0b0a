#!/usr/bin/env bash
# Regenerate the committed reports from the committed data set data/runs (benchmarks/pack_runs.py), from the
# project root, in the venv:
#   docs/results.md       COMBO paper reproduction + NASBOT runs (notes: data/runs/notes.md)
#   docs/results_bofm.md  BO-FM paper reproduction (notes: data/runs/bofm-notes.md)
#   docs/beyond.md        the suite beyond the papers (notes: data/runs/beyond/NOTES.md)
# The data set is checked against its manifest first.
set -euo pipefail
python benchmarks/pack_runs.py --out data/runs --verify
graphbo report data/runs/combo-paper data/runs/nasbot --notes data/runs/notes.md --out docs/results.md \
  --title "Reproductions: COMBO (Tables 1-3) and NASBOT"
graphbo report data/runs/bofm-paper --notes data/runs/bofm-notes.md --out docs/results_bofm.md \
  --title "BO-FM paper reproduction (supplement E.1-E.3)"
graphbo report data/runs/beyond --suite --auto --out docs/beyond.md --title "Beyond the papers" \
  --notes data/runs/beyond/NOTES.md
