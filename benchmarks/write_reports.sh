#!/usr/bin/env bash
# Regenerate the committed reports from the committed traces (from the project root, in the venv):
#   docs/results.md       COMBO paper reproduction + NASBOT runs (notes: results/notes.md)
#   docs/results_bofm.md  BO-FM paper reproduction
set -euo pipefail
graphbo report results/combo-paper results/nasbot --notes results/notes.md --out docs/results.md \
  --title "Reproductions: COMBO (Tables 1-3) and NASBOT"
graphbo report results/bofm-paper --notes results/bofm-notes.md --out docs/results_bofm.md \
  --title "BO-FM paper reproduction (supplement E.1-E.3)"
