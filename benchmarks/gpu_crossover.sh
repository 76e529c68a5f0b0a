#!/usr/bin/env bash
# The GPU check of the acquisition's device placement, as one script for a machine with a CUDA GPU (docs/measurements.md, "GPU").
#
#     bash benchmarks/gpu_crossover.sh OUT_DIR
#
# 1. the CUDA tests (tests/optimizers/test_bofm_device.py, tests/optimizers/test_combo_device.py), which are skipped elsewhere;
# 2. seconds per suggestion against n, on the CPU (one thread) and on the GPU, for COMBO on
#    wMaxSAT28 (benchmarks/suggestion_growth.py: a run resumed at n, its first fit counted) and
#    BO-FM on the 53-dimensional mixed Ackley (benchmarks/bofm_speed.py: fit + acquisition at n).
#    The CPU cases run in parallel, one process per core; the GPU cases in two chains (one per
#    method), so at most two processes share the GPU.
#
# "peak MiB" is the process's resident host memory (ru_maxrss), not GPU memory. A case stopped by its
# timeout leaves no JSON file (its log says how far it got). Use a fresh OUT_DIR per run: COMBO rows append.
#
# Environment: DEVICE (default cuda), COMBO_SIZES (100 400 800), BOFM_SIZES (100 400 800),
# CASE_TIMEOUT (seconds per case, 400). graphbo is imported from ./src; nothing is installed.
set -u
out=${1:?usage: gpu_crossover.sh OUT_DIR}
mkdir -p "$out"
device=${DEVICE:-cuda}
combo_sizes=${COMBO_SIZES:-100 400 800}
bofm_sizes=${BOFM_SIZES:-100 400 800}
case_timeout=${CASE_TIMEOUT:-400}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

{
    date -u
    nvidia-smi -L 2>&1 || true
    "$py" -c "import torch, numpy, scipy, sys; print(sys.version.split()[0], 'torch', torch.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'cuda', torch.cuda.is_available())"
    echo "cores: $(nproc)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

timeout 200 "$py" -m pytest tests/optimizers/test_bofm_device.py tests/optimizers/test_combo_device.py -q -rs -p no:cacheprovider \
    >"$out/pytest.txt" 2>&1
echo "pytest exit $?"; tail -5 "$out/pytest.txt"

combo() {  # combo SIZE LABEL [--device D]
    local n=$1 label=$2; shift 2
    timeout "$case_timeout" "$py" benchmarks/suggestion_growth.py --method combo --sizes "$n" --suggestions 3 \
        --burn 30 "$@" --out "$out/combo_${label}_$n.json" >"$out/combo_${label}_$n.log" 2>&1
}
bofm() {  # bofm SIZE LABEL [--device D]
    local n=$1 label=$2; shift 2
    timeout "$case_timeout" "$py" benchmarks/bofm_speed.py --problem ackley53 --sizes "$n" --repeats 3 \
        --label "$label" "$@" --json "$out/bofm_${label}_$n.json" >"$out/bofm_${label}_$n.log" 2>&1
}

for n in $combo_sizes; do combo "$n" cpu & done
for n in $bofm_sizes; do bofm "$n" cpu & done
(for n in $combo_sizes; do combo "$n" dev --device "$device"; done) &
(for n in $bofm_sizes; do bofm "$n" dev --device "$device"; done) &
wait

"$py" - "$out" <<'EOF'
import glob, json, os, sys

out = sys.argv[1]
print(f"{'method':<6} {'device':<6} {'n':>5} {'s/suggestion':>13} {'first fit s':>12} {'peak MiB':>9}")
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    method, label, n = os.path.basename(path)[:-5].split("_")
    data = json.load(open(path))
    if method == "combo":
        for r in data:
            print(f"combo  {label:<6} {r['n']:>5} {r['mean_s']:>13.3f} {r['first_fit_s']:>12.1f} {r['peak_mib']:>9.0f}")
    else:
        for key, r in data.items():
            print(f"bofm   {label:<6} {n:>5} {r.get('total_s', float('nan')):>13.3f} "
                  f"{r.get('first_s', float('nan')):>12.1f} {r.get('peak_mib', float('nan')):>9.0f}  {key}")
EOF
for f in "$out"/*.log; do
    if grep -q "Traceback\|Error" "$f"; then echo "== $f"; tail -15 "$f"; fi
done
