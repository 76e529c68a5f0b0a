"""Seconds per suggestion of the authors' COMBO code and of graphbo's, timed in one process.

    python benchmarks/combo_original_speed.py COMBO_DIR --maxsat-dir ../shared/data/maxsat \
        [--problem all] [--repeats 5] [--repeats-large 2] [--out FILE]

``COMBO_DIR`` is a checkout of https://github.com/QUVA-Lab/COMBO (the folder
holding the ``COMBO`` package), made to import under the installed torch (see
``docs/measurements.md`` for the changes that needs); nothing of it is part of
graphbo. For each problem both implementations get the same ``n`` random
configurations and values (graphbo's benchmark evaluates them; graphbo draws
them), each runs its first fit's burn-in untimed (the authors': 99 + 1 sweeps
as in their ``main.py``), then the two make ``--repeats`` suggestions each,
alternating which goes first. A suggestion of the authors' code is the body of
their ``run_suggest``: 10 slice-sampling sweeps warm-started from the previous
ones, EI averaged over the 10 samples, 20,000 random + 20 spray vertices and
greedy ascent from the best 20 (their code has 10 spray vertices; it is set to
the paper's 20 here, as graphbo uses). Their printing goes to /dev/null.
Torch runs on one thread. Medians of wall and process CPU seconds and the
ratios original / graphbo are printed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before NumPy / torch load their BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from combo_speed import PROBLEMS, cases, medians, prepare, time_suggestion  # noqa: E402


class OriginalCOMBO:
    """The authors' model and acquisition on given data, stepped like their ``main.run_bo``."""

    def __init__(self, orig: dict, objective, X: np.ndarray, y: np.ndarray):
        self.orig = orig
        self.n_vertices = objective.n_vertices
        self.adj_mat_list = objective.adjacency_mat
        self.X = torch.from_numpy(np.asarray(X, dtype=np.int64))
        self.y = torch.tensor(y, dtype=torch.float32).view(-1, 1)
        kernel = orig["DiffusionKernel"](grouped_log_beta=torch.ones(len(objective.fourier_freq)),
                                         fourier_freq_list=objective.fourier_freq,
                                         fourier_basis_list=objective.fourier_basis)
        self.model = orig["GPRegression"](kernel=kernel)
        self.model.init_param(self.y)
        self.log_beta = self.y.new_zeros(self.X.size(1))
        self.partition = [[m] for m in range(self.X.size(1))]
        with quiet():  # burn-in as in their COMBO(): 99 discarded sweeps + 1 kept, untimed
            s = orig["posterior_sampling"](self.model, self.X, self.y, self.n_vertices, self.adj_mat_list,
                                           self.log_beta, self.partition, n_sample=1, n_burn=99, n_thin=1)
        self.log_beta, self.partition = s[1][0], s[2][0]

    def suggest(self) -> dict:
        """One suggestion, as their ``run_suggest``; wall ``fit``, ``acquisition``, ``total`` and ``cpu`` seconds."""
        o = self.orig
        c0, t0 = time.process_time(), time.perf_counter()
        with quiet():
            reference = torch.min(self.y, dim=0)[0].item()
            hyper, log_beta_s, partition_s, freq_s, basis_s, edge_s = o["posterior_sampling"](
                self.model, self.X, self.y, self.n_vertices, self.adj_mat_list, self.log_beta, self.partition,
                n_sample=10, n_burn=0, n_thin=1)
            self.log_beta, self.partition = log_beta_s[-1], partition_s[-1]
            t1 = time.perf_counter()
            x_opt = self.X[torch.argmin(self.y)]
            inference = o["inference_sampling"](self.X, self.y, self.n_vertices, hyper, log_beta_s, partition_s,
                                                freq_s, basis_s)
            o["next_evaluation"](x_opt, self.X, inference, partition_s, edge_s, self.n_vertices,
                                 o["expected_improvement"], reference, False)
        t2 = time.perf_counter()
        return {"fit": t1 - t0, "acquisition": t2 - t1, "total": t2 - t0, "cpu": time.process_time() - c0}


@contextlib.contextmanager
def quiet():
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        yield


def load_original(combo_dir: str, spray: int) -> dict:
    """The authors' functions from the checkout at ``combo_dir``, their spray count set to ``spray``."""
    sys.path.insert(0, os.path.abspath(combo_dir))
    # their torch.cholesky / torch.triangular_solve still work under torch 2 and warn once each
    warnings.filterwarnings("ignore", message=r"torch\.\w+ is deprecated", category=UserWarning)
    mod = importlib.import_module
    starting_points = mod("COMBO.acquisition.acquisition_optimizers.starting_points")
    starting_points.N_SPRAY = spray  # read at call time by optim_inits
    return {
        "DiffusionKernel": mod("COMBO.graphGP.kernels.diffusionkernel").DiffusionKernel,
        "GPRegression": mod("COMBO.graphGP.models.gp_regression").GPRegression,
        "posterior_sampling": mod("COMBO.graphGP.sampler.sample_posterior").posterior_sampling,
        "inference_sampling": mod("COMBO.acquisition.acquisition_marginalization").inference_sampling,
        "next_evaluation": mod("COMBO.acquisition.acquisition_optimization").next_evaluation,
        "expected_improvement": mod("COMBO.acquisition.acquisition_functions").expected_improvement,
        "Branin": mod("COMBO.experiments.test_functions.discretized_continuous").Branin,
        "MaxSAT": mod("COMBO.experiments.MaxSAT.maximum_satisfiability")._MaxSAT,
        "PestControl": mod("COMBO.experiments.test_functions.multiple_categorical").PestControl,
        "n_random": starting_points.N_RANDOM_VERTICES,
        "n_starts": starting_points.N_GREEDY_ASCENT_INIT,
    }


def original_objective(orig: dict, name: str, maxsat_dir: str | None):
    """The authors' problem object (its graphs: adjacency matrices and their eigendecompositions)."""
    if name == "branin":
        return orig["Branin"]()
    if name == "maxsat28":  # an absolute file name overrides their data folder in os.path.join
        return orig["MaxSAT"](os.path.abspath(os.path.join(maxsat_dir, "maxcut-johnson8-2-4.clq.wcnf")), 0)
    if name == "pestcontrol":
        return orig["PestControl"](random_seed=0)
    raise ValueError(f"problem: no original for {name!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("combo_dir", help="checkout of QUVA-Lab/COMBO (the folder holding the COMBO package)")
    ap.add_argument("--maxsat-dir", default=None, help="folder with maxcut-johnson8-2-4.clq.wcnf")
    ap.add_argument("--problem", choices=PROBLEMS + ("all",), default="all")
    ap.add_argument("--repeats", type=int, default=5, help="suggestions timed per implementation")
    ap.add_argument("--repeats-large", type=int, default=None, help="repeats for n > 100 (default: --repeats)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.combo_dir, "COMBO")):
        ap.error(f"combo_dir: {args.combo_dir!r} has no COMBO package")
    torch.set_num_threads(1)
    orig = load_original(args.combo_dir, spray=20)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, repeats {args.repeats}; "
          f"original: {orig['n_random']} random + 20 spray, {orig['n_starts']} starts")
    head = f"{'problem':<12} {'n':>4} {'code':<9} {'fit s':>7} {'acq s':>7} {'total s':>8} {'CPU s':>7}"
    print(head)
    rows = []
    for name, bench, n in cases(args.problem, args.maxsat_dir):
        repeats = args.repeats_large if (args.repeats_large and n > 100) else args.repeats
        torch.manual_seed(args.seed)
        np.random.seed(args.seed)  # the authors' code draws from the global generators
        ours = prepare(bench, n, args.seed)
        theirs = OriginalCOMBO(orig, original_objective(orig, name, args.maxsat_dir), ours.X, ours.y)
        runs = {"graphbo": [], "original": []}
        for r in range(repeats):
            order = ("graphbo", "original") if r % 2 == 0 else ("original", "graphbo")
            for code in order:
                runs[code].append(time_suggestion(ours) if code == "graphbo" else theirs.suggest())
        row = {"problem": name, "n": n, "repeats": repeats, "date": time.strftime("%Y-%m-%d"),
               "load_avg": os.getloadavg()[0], "runs": runs}
        for code in ("graphbo", "original"):
            m = row[code] = medians(runs[code])
            print(f"{name:<12} {n:>4} {code:<9} {m['fit']:>7.3f} {m['acquisition']:>7.3f} {m['total']:>8.3f} "
                  f"{m['cpu']:>7.3f}", flush=True)
        row["ratio_wall"] = row["original"]["total"] / row["graphbo"]["total"]
        row["ratio_cpu"] = row["original"]["cpu"] / row["graphbo"]["cpu"]
        print(f"{'':<12} {'':>4} {'ratio':<9} original / graphbo: {row['ratio_wall']:.1f}x wall, "
              f"{row['ratio_cpu']:.1f}x CPU", flush=True)
        rows.append(row)
        if args.out:  # after every case, so a long run leaves what it has
            with open(args.out, "w") as fh:
                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
