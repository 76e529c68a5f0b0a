#!/usr/bin/env bash
# Reproduce Tables 1-3 of the COMBO paper with `graphbo compare`, then write docs/results.md
# (benchmarks/write_reports.sh).
#
#   bash benchmarks/reproduce_combo_paper.sh            # from the project root, in the venv
#   SEEDS=0-24 WORKERS=2 bash benchmarks/reproduce_combo_paper.sh
#   ONLY="ising-0.01 pestcontrol" bash benchmarks/reproduce_combo_paper.sh
#   OUT=results/combo-paper-horseshoe BETA_PRIOR=horseshoe bash benchmarks/reproduce_combo_paper.sh
#
# COMBO runs with BETA_PRIOR (default "reference": the authors' sampler, which produced the paper's
# tables; "horseshoe" is graphbo's default, the paper's prior sampled with its Jacobian,
# docs/combo_prior.md), passed as a method option and recorded in each run, and with the paper's
# acquisition optimiser (trim_proposals=false; graphbo's default trims proposals, docs/broad_suite.md).
#
# Run files are written under $OUT (not committed); the committed reports are made from the packed data
# set data/runs: `python benchmarks/pack_runs.py results --only combo-paper --out data/runs`, then
# `bash benchmarks/write_reports.sh`.
#
# Every (benchmark, method, seed) is its own resumable run under $OUT: rerunning the
# script skips finished runs and continues unfinished ones where they stopped.
# Three passes: COMBO, then the cheap baselines, on every benchmark first, then TPE and
# SMAC (minutes per run each), so that an interrupted reproduction has COMBO's
# numbers everywhere before it has every baseline anywhere.
set -euo pipefail
OUT=${OUT:-results/combo-paper}
MAXSAT_DIR=${MAXSAT_DIR:-../shared/data/maxsat}
SEEDS=${SEEDS:-0-4}
BETA_PRIOR=${BETA_PRIOR:-reference}
WORKERS=${WORKERS:-1}
ONLY=${ONLY:-"branin maxsat28 ising-0 ising-0.0001 ising-0.01 contamination-0 contamination-0.0001 contamination-0.01 pestcontrol maxsat43 maxsat60"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

bench_args() {  # benchmark id -> `graphbo compare` arguments
  case "$1" in
    branin) echo "branin --budget 100 --n-initial 2" ;;
    maxsat28) echo "maxsat --wcnf $MAXSAT_DIR/maxcut-johnson8-2-4.clq.wcnf" ;;
    maxsat43) echo "maxsat --wcnf $MAXSAT_DIR/maxcut-hamming8-2.clq.wcnf" ;;
    maxsat60) echo "maxsat --wcnf $MAXSAT_DIR/frb-frb10-6-4.wcnf" ;;
    ising-*) echo "ising --lamda ${1#ising-}" ;;
    contamination-*) echo "contamination --lamda ${1#contamination-}" ;;
    pestcontrol) echo "pestcontrol" ;;
    *) echo "unknown benchmark id $1" >&2; exit 2 ;;
  esac
}
binary() { case "$1" in branin|pestcontrol) return 1 ;; *) return 0 ;; esac; }

for pass in "combo" "rs,sa,re" "tpe,smac"; do
  for b in $ONLY; do
    methods=$pass
    options=()
    if [ "$pass" = "combo" ]; then options=(--option "beta_prior=\"$BETA_PRIOR\"" --option "trim_proposals=false"); fi
    if [ "$pass" = "rs,sa,re" ] && binary "$b"; then methods="$methods,bocs,bocs-sdp"; fi
    # shellcheck disable=SC2046
    graphbo compare $(bench_args "$b") --methods "$methods" --seeds "$SEEDS" --workers "$WORKERS" --out "$OUT/$b" \
      "${options[@]}"
  done
done
graphbo report "$OUT" --title "COMBO paper reproduction (Tables 1-3)"  # $OUT/report.md
