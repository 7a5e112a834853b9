"""A run or a sweep as pandas DataFrames: one row per (step, node), or one row per run."""

import os

import h5py
import numpy as np
import pandas as pd

from analysis.load import LoadError, MissingData


def _read(f, path, name):
    if name not in f:
        raise MissingData(path, "/" + name)
    return f[name][()]


def run_frame(path):
    """One row per step and node of a run file, in step then node order:

    step            0-based step index (`/train/step`)
    node            the node
    step_time       seconds the node spent on the step: its finish time (`/train/time`, the
                    cumulative time the node finished the step) less its previous step's finish
                    (0 before the first step)
    compute         the step's local compute (`/train/compute_time`)
    exposed_comm    step_time - compute: the time the node waited on communication
    bytes           payload bytes the node sent in the step (`/comm/bytes`)
    lost_bytes      bytes of the node's messages (`/comm/messages` src = node) that left during
                    the step and were lost (datagram transports); 0 for a collective kept as
                    one row (src -1), whose losses have no node
    loss            the node's training loss (NaN in a projection)
    accuracy        the evaluation's accuracy after this step (`/eval/step` counts steps done, so
                    step s carries the evaluation at `/eval/step` = s + 1), NaN elsewhere and in
                    runs without evaluations

    A step a node never finished (a stopped run) has a NaN finish and so NaN times."""
    if not os.path.exists(path):
        raise LoadError(f"{path}: no such file")
    with h5py.File(path, "r") as f:
        steps = np.asarray(_read(f, path, "train/step"), dtype=np.int64)
        finish = np.asarray(_read(f, path, "train/time"), dtype=float)
        compute = np.asarray(_read(f, path, "train/compute_time"), dtype=float)
        sent = np.asarray(_read(f, path, "comm/bytes"), dtype=np.uint64)
        loss = np.asarray(f["train/loss"][()], dtype=float) if "train/loss" in f else np.full(finish.shape, np.nan)
        messages = f["comm/messages"][()] if "comm/messages" in f else None
        eval_steps = np.asarray(f["eval/step"][()], dtype=np.int64) if "eval/step" in f else np.array([], np.int64)
        eval_accuracy = np.asarray(f["eval/accuracy"][()], dtype=float) if "eval/accuracy" in f else None
    rows, nodes = finish.shape
    started = np.vstack([np.zeros((1, nodes)), finish[:-1]])
    step_time = finish - started
    lost = np.zeros((rows, nodes), dtype=np.uint64)
    if messages is not None and len(messages) and "lost_bytes" in messages.dtype.names:
        for m in messages[messages["lost_bytes"] > 0]:
            node = int(m["src"])
            if node < 0 or node >= nodes:
                continue
            # The step whose span on the sending node holds the send.
            s = int(np.searchsorted(finish[:, node], m["t_send"], side="right"))
            if s < rows:
                lost[s, node] += np.uint64(m["lost_bytes"])
    accuracy = np.full(rows, np.nan)
    if eval_accuracy is not None:
        for done, value in zip(eval_steps, eval_accuracy):
            if 1 <= done <= rows:
                accuracy[done - 1] = value
    frame = pd.DataFrame({
        "step": np.repeat(steps, nodes),
        "node": np.tile(np.arange(nodes), rows),
        "step_time": step_time.reshape(-1),
        "compute": compute.reshape(-1),
        "exposed_comm": (step_time - compute).reshape(-1),
        "bytes": sent.reshape(-1),
        "lost_bytes": lost.reshape(-1),
        "loss": loss.reshape(-1),
        "accuracy": np.repeat(accuracy, nodes),
    })
    return frame


def sweep_frame(directory):
    """One row per run of a sweep folder: its `sweep.csv` (run name, one column per swept key as
    written, status, exit code and the runs' summary numbers), with the summary numbers as
    floats (empty where a run wrote none)."""
    manifest = os.path.join(directory, "sweep.csv")
    if not os.path.exists(manifest):
        raise LoadError(f"{directory}: no sweep.csv here")
    frame = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    for column in ("exit_code", "projected_time_s", "total_bytes", "final_eval_loss", "final_accuracy",
                   "host_time_s", "steps_completed"):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
    return frame


def sweep_steps(directory):
    """Every run's run_frame, stacked with a `run` column first, for the sweep's runs whose
    file exists (in sweep.csv order)."""
    frames = []
    for name in sweep_frame(directory)["run"]:
        path = os.path.join(directory, name + ".h5")
        if os.path.exists(path):
            frames.append(run_frame(path).assign(run=name))
    if not frames:
        return pd.DataFrame()
    stacked = pd.concat(frames, ignore_index=True)
    return stacked[["run"] + [c for c in stacked.columns if c != "run"]]
