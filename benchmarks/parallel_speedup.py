"""Wall-clock speed-up of parallel asynchronous evaluation (``minimize(..., n_workers=k)``).

    python benchmarks/parallel_speedup.py                      # 48 evaluations of a 2-second objective
    python benchmarks/parallel_speedup.py --evals 8 --seconds 0.2 --workers 1,2   # a quick check

The objective sleeps ``--seconds`` and then evaluates a cheap quadratic, so
it stands for an expensive experiment that leaves the CPU free. For each
method (``rs``, ``combo``) it is minimised with ``--evals`` evaluations:
sequentially in this process (1 worker), then with 2 and 4 workers in a local
process pool and on a Dask ``LocalCluster`` (one single-threaded worker process
per evaluation slot; the cluster is started before the clock and not timed).
It prints the wall-clock time and the speed-up over the sequential run.
The ideal speed-up is ``k``; COMBO's suggestions are made in this process
between evaluations, so they are not parallel and lower it.
"""

from __future__ import annotations

import argparse
import json
import time

import graphbo as gb
import graphbo.study  # noqa: F401  (imports the model code before any clock starts)



def make_space() -> gb.Space:
    return gb.Space({f"x{i}": gb.Ordinal(list(range(8))) for i in range(6)})


class Objective:
    """``time.sleep(delay)`` + a quadratic; picklable (module-level class), for processes and Dask."""

    def __init__(self, delay: float):
        self.delay = float(delay)

    def __call__(self, config: dict) -> float:
        time.sleep(self.delay)
        return float(sum((config[f"x{i}"] - (i % 8)) ** 2 for i in range(6)))


def one_run(method: str, evals: int, delay: float, workers: int, backend: str, client=None, options=None) -> dict:
    executor = client.get_executor() if backend == "dask" else None
    t0 = time.perf_counter()
    result = gb.minimize(Objective(delay), make_space(), method=method, budget=evals, seed=0,
                         n_workers=workers, executor=executor, **(options or {}))
    wall = time.perf_counter() - t0
    assert result.n_complete == evals, f"{result.n_failed} evaluations failed"
    return {"method": method, "backend": backend, "workers": workers, "wall_seconds": round(wall, 3),
            "best": result.best.value, "suggest_seconds": round(sum(result.suggest_seconds), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--evals", type=int, default=48)
    ap.add_argument("--seconds", type=float, default=2.0, help="sleep per evaluation")
    ap.add_argument("--workers", default="1,2,4", help="comma-separated; 1 is the sequential baseline")
    ap.add_argument("--methods", default="rs,combo")
    ap.add_argument("--backends", default="processes,dask")
    ap.add_argument("--n-initial", type=int, default=10)
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    args = ap.parse_args()
    workers = sorted({int(w) for w in args.workers.split(",")})
    methods = [m for m in args.methods.split(",") if m]
    backends = [b for b in args.backends.split(",") if b]
    rows = []
    clusters = {}

    def dask_client(k: int):
        """A LocalCluster of k single-threaded worker processes, started (and warmed up) once, untimed."""
        if k not in clusters:
            import distributed

            cluster = distributed.LocalCluster(n_workers=k, processes=True, threads_per_worker=1,
                                               dashboard_address=":0")
            client = distributed.Client(cluster)
            client.wait_for_workers(k)
            client.run(__import__, "graphbo.loop")
            clusters[k] = (cluster, client)
        return clusters[k][1]

    try:
        print(f"{args.evals} evaluations of a {args.seconds:g} s objective; speed-up over 1 worker in this process")
        print(f"{'method':<7} {'backend':<10} {'workers':>7} {'seconds':>9} {'speed-up':>9} {'suggest s':>10}")
        for method in methods:
            options = {"n_initial": args.n_initial}
            base = one_run(method, args.evals, args.seconds, 1, "sequential", options=options)
            rows.append(dict(base, speedup=1.0))
            print(f"{method:<7} {'sequential':<10} {1:>7} {base['wall_seconds']:>9.2f} {1.0:>9.2f} "
                  f"{base['suggest_seconds']:>10.2f}", flush=True)
            for backend in backends:
                for k in workers:
                    if k == 1:
                        continue
                    client = dask_client(k) if backend == "dask" else None
                    row = one_run(method, args.evals, args.seconds, k, backend, client, options)
                    row["speedup"] = round(base["wall_seconds"] / row["wall_seconds"], 2)
                    rows.append(row)
                    print(f"{method:<7} {backend:<10} {k:>7} {row['wall_seconds']:>9.2f} {row['speedup']:>9.2f} "
                          f"{row['suggest_seconds']:>10.2f}", flush=True)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"evals": args.evals, "seconds": args.seconds, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
