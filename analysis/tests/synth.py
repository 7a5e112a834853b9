"""Writes small testbed-layout HDF5 files with known contents (README "HDF5 layout")."""

import h5py
import numpy as np

SCENARIO = """name: {name}
seed: 0
nodes: {nodes}
topology:
  kind: ring
  link:
    bandwidth: {bandwidth}
    latency: {latency}
    loss: 0
  links:
    []
workload:
  model: cnn
  steps: {steps}
  eval_every: 3
algorithm:
  name: {algorithm}
output:
  path: results/{name}.h5
"""

MESSAGE = np.dtype([("src", "<i4"), ("dst", "<i4"), ("bytes", "<u8"), ("t_send", "<f8"),
                    ("t_recv", "<f8"), ("lost_bytes", "<u8"), ("kind", "S16")])


def default_datasets(steps=6, nodes=3, time_scale=1.0):
    """The base run: node n finishes step s at (s + 1) * 0.1 * (1 + 0.5 n) * time_scale, sends
    100 (n + 1) bytes a step, computes 0.05 s a step; evals after steps 3 and 6."""
    s = np.arange(steps)
    n = np.arange(nodes)
    d = {
        "train/step": s.astype(np.int64),
        "train/loss": np.full((steps, nodes), 2.0) - 0.1 * s[:, None],
        "train/time": ((s[:, None] + 1) * 0.1 * (1 + 0.5 * n[None, :]) * time_scale),
        "train/compute_time": np.full((steps, nodes), 0.05),
        "comm/bytes": np.tile((100 * (n + 1)).astype(np.uint64), (steps, 1)),
        "comm/messages": np.array([(0, 1, 500, 0.0, 0.1, 0, b"allreduce"), (1, 2, 700, 0.0, 0.1, 0, b"allreduce"),
                                   (0, 1, 100, 0.2, 0.3, 0, b"allreduce"), (2, 0, 50, 0.2, 0.3, 0, b"allreduce")],
                                  dtype=MESSAGE),
        "eval/step": np.array([3, 6], np.int64),
        "eval/loss": np.array([1.5, 0.9]),
        "eval/accuracy": np.array([0.6, 0.75]),
        "eval/perplexity": np.array([np.nan, np.nan]),
        "eval/replica_loss": np.array([[1.5] * nodes, [0.9] * nodes]),
        "eval/replica_accuracy": np.array([[0.6] * nodes, [0.75] * nodes]),
        "eval/variants/noise/loss": np.array([1.7, 1.1]),
        "eval/variants/noise/accuracy": np.array([0.5, 0.55]),
        "eval/variants/rotation/loss": np.array([2.0, 1.6]),
        "eval/variants/rotation/accuracy": np.array([0.4, 0.45]),
        "replicas/correlation": np.array([0.95, 0.8]),
        "replicas/distance": np.array([0.1, 0.3]),
    }
    return d


def write_run(path, name="run", algorithm="ddp", bandwidth="1e+08", latency=0.01, steps=6, nodes=3,
              time_scale=1.0, status="completed", omit=(), summary=None, datasets=None, **overrides):
    """Write one run file. `overrides` replace datasets (`eval_loss=` for eval/loss: '_' -> '/'
    on the first underscore), `datasets` replaces or adds any path, `omit` drops datasets,
    `summary` replaces /summary attributes."""
    data = default_datasets(steps, nodes, time_scale)
    for key, value in overrides.items():
        group, rest = key.split("_", 1)
        if f"{group}/{rest}" not in data:  # a typo would otherwise add a dataset nobody reads
            raise KeyError(f"no default dataset {group}/{rest}; use datasets={{path: value}}")
        data[f"{group}/{rest}"] = np.asarray(value)
    for key, value in (datasets or {}).items():
        data[key.lstrip("/")] = np.asarray(value)
    for key in omit:
        data.pop(key.lstrip("/"))
    if summary is None:
        summary = {"projected_time_s": float(np.nanmax(data["train/time"])) if "train/time" in data else 0.0,
                   "total_bytes": np.uint64(sum(100 * (n + 1) for n in range(nodes)) * steps),
                   "final_eval_loss": 0.9, "final_accuracy": 0.75, "host_time_s": 1.0, "model_parameters": 10}
    with h5py.File(path, "w") as f:
        f.attrs["scenario"] = SCENARIO.format(name=name, nodes=nodes, bandwidth=bandwidth, latency=latency,
                                              steps=steps, algorithm=algorithm)
        f.attrs["testbed_version"] = "0.1.0"
        f.attrs["status"] = status
        for key, value in data.items():
            f.create_dataset(key, data=value)
        g = f.create_group("summary")
        for key, value in summary.items():
            g.attrs[key] = value
    return str(path)
