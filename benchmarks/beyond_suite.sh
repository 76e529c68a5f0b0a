#!/usr/bin/env bash
# The suite of docs/beyond.md: graphbo's `auto` against Optuna's GPSampler and TPE, SMAC3 and random
# search, budget 150 (20 random initial points shared by all methods), one process, one thread.
# Resumable: each run is a study file under results/beyond/PROBLEM/METHOD/seedS.db, and the same command
# continues whatever is unfinished. Seeds are the outer loop, so a partial suite has every problem at the same
# number of seeds. From the project root, in the venv (extras: test, or smac + tpe + rna):
#   bash benchmarks/beyond_suite.sh [SEEDS...]        # default: 0 1 2 3 4
# Run files are not committed: pack them into the data set, then write the reports:
#   python benchmarks/pack_runs.py results --only beyond --out data/runs && bash benchmarks/write_reports.sh
set -uo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PROBLEMS=${PROBLEMS:-"labs maxsat60 contamination pestcontrol rna-folding hpo-surface svm ackley53"}
METHODS=${METHODS:-"auto,gp-optuna,tpe,smac,rs"}
SEEDS=${*:-0 1 2 3 4}
for seed in $SEEDS; do
  for problem in $PROBLEMS; do
    graphbo compare "$problem" --methods "$METHODS" --seeds "$seed" --budget 150 --n-initial 20 --workers 1 \
      --out "results/beyond/$problem" || echo "beyond_suite: $problem seed $seed did not finish (rerun continues it)"
  done
done
