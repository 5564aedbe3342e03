"""Strong scaling of the flow solver's time step, from ``tachyflow bench step`` runs.

``bench step`` measures one rank count per launch; :func:`merge` puts the runs of one grid
together — time per step, speedup and parallel efficiency against the fewest ranks
measured — and :func:`plot` draws speedup with the ideal line and efficiency, as the
cluster report of ``tachyflow bench suite`` shows them.
"""

from __future__ import annotations

import copy

from tachyflow.io.figures import new_subplots, save_figure


def merge(documents: list[dict]) -> dict:
    """One ``scaling`` document from ``step`` documents of the same grid."""
    if not documents:
        raise ValueError("strong scaling needs at least one `bench step` results document")
    grids = {tuple(d["params"]["global_shape"]) for d in documents}
    if len(grids) != 1:
        raise ValueError(f"strong scaling needs one grid, got {sorted(grids)}")
    ordered = sorted(documents, key=lambda d: d["mpi"]["ranks"])
    merged = copy.deepcopy(ordered[0])
    merged["benchmark"] = "scaling"
    merged["params"] = {
        "of": "flow solver time step (bench step)",
        "global_shape": list(grids.pop()),
        "ranks": [d["mpi"]["ranks"] for d in ordered],
    }
    base = None
    results = []
    for document in ordered:
        entry = next(e for e in document["results"] if e["name"] == "tachyflow-step")
        ranks = document["mpi"]["ranks"]
        entry = {**entry, "name": f"step, {ranks} rank(s)", "ranks": ranks}
        entry["proc_grid"] = document["params"]["proc_grid"]
        if entry["verified"]:
            if base is None:
                base = (ranks, entry["median"])
            entry["speedup"] = base[1] / entry["median"]
            entry["efficiency"] = entry["speedup"] * base[0] / ranks
        results.append(entry)
    merged["results"] = results
    merged["peers"] = []
    return merged


def stem(document: dict) -> str:
    """File name stem: ``scaling_step_128x128x128``."""
    return "scaling_step_" + "x".join(map(str, document["params"]["global_shape"]))


def plot(document: dict, path):
    """Speedup against ranks with the ideal line, and parallel efficiency."""
    entries = [e for e in document["results"] if "speedup" in e]
    ranks = [e["ranks"] for e in entries]
    figure, (speed, efficiency) = new_subplots(1, 2, figsize=(10, 4))
    speed.plot(ranks, [e["speedup"] for e in entries], marker="o", label="measured")
    if ranks:
        speed.plot(ranks, [r / ranks[0] for r in ranks], linestyle="--", color="grey",
                   label="ideal")
    speed.set_ylabel(f"speedup over {ranks[0] if ranks else 1} rank(s)")
    efficiency.plot(ranks, [100 * e["efficiency"] for e in entries], marker="o")
    efficiency.axhline(100, linestyle="--", color="grey")
    efficiency.set_ylabel("parallel efficiency [%]")
    for axis in (speed, efficiency):
        axis.set_xlabel("ranks")
        axis.grid(alpha=0.3)
    speed.legend(fontsize=8)
    shape = "x".join(map(str, document["params"]["global_shape"]))
    figure.suptitle(f"Flow solver time step, {shape}: strong scaling", fontsize=10)
    return save_figure(figure, path)
