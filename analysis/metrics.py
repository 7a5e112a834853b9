"""Quantities the figures plot, derived from a run's datasets (eval times, bytes, time splits)."""

import numpy as np

from analysis.load import MissingData


def _row_of_step(run, steps):
    """Index into the /train rows of each step number in `steps` (-1 where absent)."""
    train_step = np.asarray(run.read("/train/step"), dtype=np.int64)
    where = {int(s): i for i, s in enumerate(train_step)}
    return np.array([where.get(int(s), -1) for s in steps], dtype=np.int64)


def eval_times(run):
    """Projected time of each eval: max over nodes of /train/time at step /eval/step - 1.

    /eval/step counts steps completed by every node, so eval k happened once the slowest
    node finished step eval_step - 1 (0-based). An eval before any step is at time 0;
    a step no node finished (a diverged run) gives NaN.
    """
    eval_step = np.asarray(run.read("/eval/step"), dtype=np.int64)
    time = np.asarray(run.read("/train/time"), dtype=np.float64)
    rows = _row_of_step(run, eval_step - 1)
    out = np.full(len(eval_step), np.nan)
    for k, (s, r) in enumerate(zip(eval_step, rows)):
        if s <= 0:
            out[k] = 0.0
        elif r >= 0 and np.isfinite(time[r]).any():
            out[k] = np.nanmax(time[r])  # NaN entries are nodes that never finished the step
    return out


def eval_bytes(run):
    """Cumulative payload bytes all nodes sent up to and including step eval_step - 1."""
    eval_step = np.asarray(run.read("/eval/step"), dtype=np.int64)
    train_step = np.asarray(run.read("/train/step"), dtype=np.int64)
    per_step = np.asarray(run.read("/comm/bytes"), dtype=np.float64).reshape(len(train_step), -1).sum(axis=1)
    return np.array([per_step[train_step <= s - 1].sum() for s in eval_step], dtype=np.float64)


def eval_loss(run):
    return np.asarray(run.read("/eval/loss"), dtype=np.float64)


def time_to_target(run, target):
    """Projected time of the first eval whose loss is <= target; NaN if the run never gets there."""
    loss = eval_loss(run)
    times = eval_times(run)
    hit = np.nonzero(np.isfinite(loss) & (loss <= target))[0]
    return float(times[hit[0]]) if len(hit) else float("nan")


def projected_time(run):
    """/summary projected_time_s, or (for a killed run without a summary) the last node's finish."""
    if "projected_time_s" in run.summary:
        return float(run.summary["projected_time_s"])
    time = np.asarray(run.read("/train/time"), dtype=np.float64)
    if not np.isfinite(time).any():
        raise MissingData(run.path, "/summary attribute 'projected_time_s' (and /train/time has no finite value)")
    return float(np.nanmax(time))


def compute_and_exposed(run):
    """(compute, exposed communication) seconds: sum over steps of the mean node compute time,
    and projected time minus that."""
    compute_time = np.asarray(run.read("/train/compute_time"), dtype=np.float64)
    compute = float(compute_time.reshape(compute_time.shape[0], -1).mean(axis=1).sum()) if compute_time.size else 0.0
    return compute, projected_time(run) - compute


def bytes_per_node(run):
    """Total payload bytes each node sent (sum over steps of /comm/bytes)."""
    b = np.asarray(run.read("/comm/bytes"), dtype=np.uint64)
    return b.reshape(b.shape[0], -1).sum(axis=0, dtype=np.uint64) if b.size else np.zeros(0, np.uint64)


def bytes_per_pair(run):
    """((src, dst) pairs, bytes) summed over /comm/messages, ordered by src then dst. A collective
    too large for a row a message is one row with src and dst -1 (the file's /comm attribute
    messages_one_row_above): it has no pairs, and is left out."""
    m = run.read("/comm/messages")
    for field in ("src", "dst", "bytes"):
        if m.dtype.names is None or field not in m.dtype.names:
            raise MissingData(run.path, f"/comm/messages field '{field}'")
    m = m[m["src"] >= 0]
    if len(m) == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.uint64)
    # One int64 key per pair (src in the high half) sorts by src then dst and is much faster
    # than np.unique over rows for the millions of messages a large ring run records.
    key = (m["src"].astype(np.int64) << 32) | m["dst"].astype(np.int64)
    uniq, inverse = np.unique(key, return_inverse=True)
    totals = np.zeros(len(uniq), np.uint64)
    np.add.at(totals, inverse.reshape(-1), m["bytes"].astype(np.uint64))
    return np.stack([uniq >> 32, uniq & 0xFFFFFFFF], axis=1), totals
