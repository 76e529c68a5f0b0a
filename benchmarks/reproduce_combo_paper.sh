#!/usr/bin/env bash
# Reproduce Tables 1-3 of the COMBO paper with `graphbo compare`, then write docs/results.md.
#
#   bash benchmarks/reproduce_combo_paper.sh            # from the project root, in the venv
#   SEEDS=0-24 WORKERS=2 bash benchmarks/reproduce_combo_paper.sh
#
# Every (benchmark, method, seed) is its own resumable run under $OUT: rerunning the
# script skips finished runs and continues unfinished ones where they stopped.
set -euo pipefail
OUT=${OUT:-results/combo-paper}
MAXSAT_DIR=${MAXSAT_DIR:-../shared/data/maxsat}
SEEDS=${SEEDS:-0-4}
WORKERS=${WORKERS:-1}
BIN="combo,rs,sa,re,bocs,tpe,smac"
NONBIN="combo,rs,sa,re,tpe,smac"
c() { graphbo compare "$@" --seeds "$SEEDS" --workers "$WORKERS"; }

c branin --methods "$NONBIN" --budget 100 --n-initial 2 --out "$OUT/branin"
c maxsat --wcnf "$MAXSAT_DIR/maxcut-johnson8-2-4.clq.wcnf" --methods "$BIN" --out "$OUT/maxsat28"
for lam in 0 0.0001 0.01; do
  c ising --lamda "$lam" --methods "$BIN" --out "$OUT/ising-$lam"
done
c maxsat --wcnf "$MAXSAT_DIR/maxcut-hamming8-2.clq.wcnf" --methods "$BIN" --out "$OUT/maxsat43"
c maxsat --wcnf "$MAXSAT_DIR/frb-frb10-6-4.wcnf" --methods "$BIN" --out "$OUT/maxsat60"
for lam in 0 0.0001 0.01; do
  c contamination --lamda "$lam" --methods "$BIN" --out "$OUT/contamination-$lam"
done
c pestcontrol --methods "$NONBIN" --out "$OUT/pestcontrol"
graphbo report "$OUT" --out docs/results.md --title "COMBO paper reproduction (Tables 1-3)"
