"""Paper figures from testbed runs: `python3 -m analysis.figures RUN_OR_SWEEP_DIR --out DIR`."""

import argparse
import math
import sys

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm, Normalize
from matplotlib.lines import Line2D

from analysis import metrics, style, tables
from analysis.load import LoadError, MissingData, load


class NotApplicable(Exception):
    """The inputs are fine but this figure does not apply to them (e.g. no bandwidth x latency grid)."""


def _log_if_wide(ax, axis, values):
    # Runs of different algorithms span orders of magnitude in time and bytes: log scale
    # when the positive values cover more than two decades, linear otherwise.
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0])
    if len(v) and v.max() / v.min() > 100:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")


# The colour cycle has 10 entries; runs 11-20 get dashed lines, 21-30 dotted, so none share a look.
_DASHES = ["-", "--", ":", "-."]


def _style_of(i):
    return {"color": f"C{i % 10}", "linestyle": _DASHES[(i // 10) % len(_DASHES)], "marker": "o"}


def _eval_lines(sweep, ax, x_of):
    xs_all = []
    for i, run in enumerate(sweep.runs):
        x = x_of(run)
        y = metrics.eval_loss(run)
        ax.plot(x, y, label=run.label, **_style_of(i))
        xs_all.extend(x)
    return xs_all


def fig_loss_vs_time(sweep):
    """1. Eval loss of the averaged model against the projected wall-clock time of each eval."""
    fig, ax, leg = style.legend_figure(len(sweep.runs))
    xs = _eval_lines(sweep, ax, metrics.eval_times)
    _log_if_wide(ax, "x", xs)
    ax.set_xlabel("projected wall-clock time (s)")
    ax.set_ylabel("eval loss (nats)")
    style.add_legend(ax, leg)
    style.caption(fig, sweep, "Eval loss vs projected time (eval at the slowest node's finish).")
    return fig


def fig_loss_vs_bytes(sweep):
    """2. Eval loss against cumulative payload bytes sent by all nodes up to that eval."""
    fig, ax, leg = style.legend_figure(len(sweep.runs))
    xs = _eval_lines(sweep, ax, lambda r: metrics.eval_bytes(r) / 1e6)
    _log_if_wide(ax, "x", xs)
    ax.set_xlabel("cumulative bytes sent, all nodes (MB)")
    ax.set_ylabel("eval loss (nats)")
    style.add_legend(ax, leg)
    style.caption(fig, sweep, "Eval loss vs bytes sent.")
    return fig


def fig_correlation(sweep):
    """3. Mean pairwise Pearson correlation of the replicas' parameters at each eval."""
    fig, ax, leg = style.legend_figure(len(sweep.runs))
    for i, run in enumerate(sweep.runs):
        ax.plot(run.read("/eval/step"), run.read("/replicas/correlation"), label=run.label, **_style_of(i))
    ax.set_xlabel("step")
    ax.set_ylabel("replica correlation (Pearson r)")
    style.add_legend(ax, leg)
    style.caption(fig, sweep, "Mean pairwise correlation of replica parameters.")
    return fig


def _link(run, what):
    key = f"topology.link.{what}"
    value = run.flat.get(key, run.params.get(key))
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def default_target(sweep):
    """The highest of the runs' best eval losses: every run with a finite loss reaches it."""
    best = [np.nanmin(l) for l in (metrics.eval_loss(r) for r in sweep.runs) if np.isfinite(l).any()]
    if not best:
        raise NotApplicable("no run has a finite eval loss")
    return float(max(best))


def time_to_target_grid(sweep, target):
    """{algorithm: (bandwidths, latencies, grid[lat, bw] seconds, ran[lat, bw])}; a cell averages
    its runs (e.g. seeds) and is NaN if any of them never reaches the target or none ran there
    (`ran` tells the two apart)."""
    cells, bws, lats = {}, set(), set()
    for run in sweep.runs:
        bw, lat = _link(run, "bandwidth"), _link(run, "latency")
        if bw is None or lat is None:
            continue
        bws.add(bw)
        lats.add(lat)
        cells.setdefault(run.algorithm, {}).setdefault((lat, bw), []).append(metrics.time_to_target(run, target))
    if len(bws) < 2 or len(lats) < 2:
        raise NotApplicable("needs runs that differ in both topology.link.bandwidth and topology.link.latency")
    bws, lats = sorted(bws), sorted(lats)
    out = {}
    for algo, by_cell in cells.items():
        grid = np.full((len(lats), len(bws)), np.nan)
        ran = np.zeros(grid.shape, bool)
        for (lat, bw), times in by_cell.items():
            grid[lats.index(lat), bws.index(bw)] = np.mean(times)  # NaN propagates: never reached
            ran[lats.index(lat), bws.index(bw)] = True
        out[algo] = (bws, lats, grid, ran)
    return out


def fig_time_to_target(sweep, target=None):
    """4. Heatmap of the projected time to reach a target eval loss over bandwidth x latency,
    one panel per algorithm."""
    chosen = target if target is not None else default_target(sweep)
    grids = time_to_target_grid(sweep, chosen)
    algos = sorted(grids)
    ncols = min(2, len(algos))
    nrows = math.ceil(len(algos) / ncols)
    fig, axes = style.new_figure(height_in=1.2 + 1.9 * nrows, nrows=nrows, ncols=ncols, squeeze=False)
    finite = np.concatenate([g[2][np.isfinite(g[2])] for g in grids.values()])
    positive = finite[finite > 0]
    if len(positive) and positive.max() / positive.min() > 10:
        norm = LogNorm(positive.min(), positive.max())
    else:
        norm = Normalize(finite.min() if len(finite) else 0, finite.max() if len(finite) else 1)
    image = None
    for ax in axes.flat[len(algos):]:
        ax.set_visible(False)
    for ax, algo in zip(axes.flat, algos):
        bws, lats, grid, ran = grids[algo]
        cmap = matplotlib.colormaps["viridis"].copy()
        cmap.set_bad("0.85")  # grey: never reached, or no run there
        image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", cmap=cmap, norm=norm, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            # Two significant digits without exponents, so a cell's label fits inside it.
            text = (f"{v:.0f}" if v >= 10 else f"{v:.2g}") if np.isfinite(v) else ("never" if ran[i, j] else "no run")
            ax.text(j, i, text, ha="center", va="center", fontsize=style.FONT_PT,
                    color="black" if not np.isfinite(v) or norm(v) > 0.5 else "white")
        # Plain numbers in Mbit/s and ms keep the ticks short at column width; the labels say the unit.
        ax.set_xticks(range(len(bws)), [f"{b / 1e6:g}" for b in bws])
        ax.set_yticks(range(len(lats)), [f"{l * 1e3:g}" for l in lats])
        ax.set_xlabel("link bandwidth (Mbit/s)")
        if ax in axes[:, 0]:  # one latency label per row of panels
            ax.set_ylabel("link latency (ms)")
        ax.set_title(algo)
    fig.colorbar(image, ax=axes.ravel().tolist(), label="time to target (s)")
    how = "given" if target is not None else "default: the worst run's best loss, which every run reaches"
    style.caption(fig, sweep, f"Projected time to eval loss <= {chosen:.4g} ({how}); grey: never reached.")
    fig.target_loss = chosen  # for the caller and tests: the target actually used
    return fig


def _bandwidth_factor(sweep):
    """The swept link bandwidth (any link: topology.link, topology.wan, topology.links.N), or NotApplicable."""
    keys = [k for k in sweep.swept if k.endswith(".bandwidth") or k.endswith(".bandwidth_reverse")]
    if len(keys) != 1:
        raise NotApplicable("needs runs that differ in exactly one link bandwidth key" +
                            (f" (these differ in {', '.join(keys)})" if keys else ""))
    return keys[0]


def _algorithm_of(sweep, run):
    """The run's algorithm as a line's name: its swept section ("{name: ddp, overlap: false}" ->
    "ddp, overlap: false"), or its name when the section was not swept whole."""
    if "algorithm" in sweep.swept:
        return str(run.params["algorithm"]).strip("{} ").replace("name: ", "", 1)
    return run.algorithm


def _series(sweep, factor):
    """{line name: [(x, run), ...] sorted by x}: runs that differ only in `factor` share a line,
    named by algorithm and the other swept values."""
    from analysis.style import format_value, short_key

    lines = {}
    for run in sweep.runs:
        x = run.params.get(factor, run.flat.get(factor))
        try:
            x = float(x)
        except (TypeError, ValueError):
            continue
        parts = [] if "algorithm" in sweep.swept else [run.algorithm]
        for k in sweep.swept:
            if k in (factor, "algorithm.name") or run.params.get(k) is None:
                continue
            if k == "algorithm":  # a whole section swept
                parts.append(_algorithm_of(sweep, run))
                continue
            parts.append(f"{short_key(k)}={format_value(k, run.params[k])}")
        lines.setdefault(", ".join(parts), []).append((x, run))
    return {name: sorted(points, key=lambda p: p[0]) for name, points in lines.items()}


def iteration_time(run):
    """Projected seconds per training step: the run's projected time over its completed steps."""
    steps = float(run.summary_value("steps_completed"))
    return metrics.projected_time(run) / steps if steps > 0 else float("nan")


def fig_iteration_time_vs_bandwidth(sweep):
    """9. Projected time per iteration, and training throughput (samples a second, all nodes),
    against a swept link bandwidth, a line per algorithm: the figure compression and scheduling
    papers show."""
    factor = _bandwidth_factor(sweep)
    lines = _series(sweep, factor)
    # Stacked, so that both panels keep the column's width; the legend below them.
    leg_h = 0.16 * len(lines) + 0.1
    fig, (time_ax, rate_ax, leg) = style.new_figure(height_in=3.9 + leg_h, nrows=3,
                                                    gridspec_kw={"height_ratios": [1.8, 1.8, leg_h]})
    axes = (time_ax, rate_ax)
    leg.axis("off")
    for i, (name, points) in enumerate(lines.items()):
        xs = np.asarray([x for x, _ in points]) / 1e6
        t = np.asarray([iteration_time(r) for _, r in points])
        samples = np.asarray([float(r.flat.get("nodes", 1)) * float(r.flat.get("workload.batch_size", 1)) for _, r in points])
        axes[0].plot(xs, t * 1e3, label=name, **_style_of(i))
        axes[1].plot(xs, samples / t, **_style_of(i))
    for ax in axes:
        ax.set_xscale("log")
    rate_ax.set_xlabel(f"{factor.rsplit('.', 1)[0].split('.')[-1]} bandwidth (Mbit/s)")
    time_ax.set_ylabel("time per iteration (ms)")
    rate_ax.set_ylabel("samples/s (all nodes)")
    _log_if_wide(axes[0], "y", [iteration_time(r) for pts in lines.values() for _, r in pts])
    style.add_legend(axes[0], leg)
    style.caption(fig, sweep, f"Time per iteration and throughput against {factor}.")
    return fig


def _model_of(run):
    """The run's model as the zoo names it: the workload's model, with its preset where it has one."""
    model = str(run.flat.get("workload.model", "?"))
    preset = run.flat.get(f"workload.{model}.preset")
    return f"{model} {preset}" if preset is not None else model


def fig_iteration_time_by_model(sweep):
    """11. Projected time per iteration against a swept link bandwidth, a panel per model and a
    line per algorithm (the same colour in every panel): the zoo's figure."""
    factor = _bandwidth_factor(sweep)
    models = list(dict.fromkeys(_model_of(r) for r in sweep.runs))
    if len(models) < 2:
        raise NotApplicable("needs runs of at least two models")
    algorithms = []
    panels = {m: {} for m in models}
    for run in sweep.runs:
        try:
            x = float(run.params.get(factor, run.flat.get(factor)))
        except (TypeError, ValueError):
            continue
        algo = _algorithm_of(sweep, run)
        if algo not in algorithms:
            algorithms.append(algo)
        panels[_model_of(run)].setdefault(algo, []).append((x, iteration_time(run)))
    ncols = 2
    nrows = (len(models) + ncols - 1) // ncols
    legend_columns = 4
    leg_h = 0.16 * ((len(algorithms) + legend_columns - 1) // legend_columns) + 0.1
    # Two columns of panels: a figure across the page (both columns of a paper).
    fig, axes = style.new_figure(height_in=2.0 * nrows + leg_h, width_in=2 * style.COLUMN_WIDTH_IN, nrows=nrows + 1,
                                 ncols=ncols, gridspec_kw={"height_ratios": [2.0] * nrows + [leg_h]})
    for ax in axes[-1]:
        ax.axis("off")
    flat = [ax for row in axes[:-1] for ax in row]
    for ax, model in zip(flat, models):
        for algo, points in panels[model].items():
            points.sort()
            i = algorithms.index(algo)
            ax.plot([x / 1e6 for x, _ in points], [t * 1e3 for _, t in points], label=algo, **_style_of(i))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(model)
        ax.set_xlabel(f"{factor.rsplit('.', 1)[0].split('.')[-1]} bandwidth (Mbit/s)")
        ax.set_ylabel("ms per iteration")
    for ax in flat[len(models):]:
        ax.axis("off")
    # One legend for every panel, in the algorithms' order.
    handles = [Line2D([], [], **_style_of(i)) for i in range(len(algorithms))]
    axes[-1][0].legend(handles, algorithms, frameon=False, loc="upper left", ncol=legend_columns, handlelength=1.5,
                       borderaxespad=0)
    style.caption(fig, sweep, f"Time per iteration against {factor}, a panel per model.")
    return fig


def fig_time_to_target_line(sweep, target=None):
    """4b. One-factor sweeps: projected time to a target eval loss against the swept link
    bandwidth, a line per algorithm (never reached: left out of its line, marked at the top)."""
    factor = _bandwidth_factor(sweep)
    chosen = target if target is not None else default_target(sweep)
    lines = _series(sweep, factor)
    fig, ax, leg = style.legend_figure(len(lines))
    for i, (name, points) in enumerate(lines.items()):
        xs = np.asarray([x for x, _ in points]) / 1e6
        t = np.asarray([metrics.time_to_target(r, chosen) for _, r in points])
        ax.plot(xs, t, label=name, **_style_of(i))
    ax.set_xscale("log")
    ax.set_xlabel(f"{factor.rsplit('.', 1)[0].split('.')[-1]} bandwidth (Mbit/s)")
    ax.set_ylabel("projected time to target (s)")
    style.add_legend(ax, leg)
    how = "given" if target is not None else "default: the worst run's best loss, which every run reaches"
    style.caption(fig, sweep, f"Projected time to eval loss <= {chosen:.4g} ({how}).")
    fig.target_loss = chosen
    return fig


def fig_time_to_target_any(sweep, target=None):
    """4. The heatmap over bandwidth x latency when both vary, else the line against bandwidth."""
    try:
        return fig_time_to_target(sweep, target)
    except NotApplicable as grid:
        try:
            return fig_time_to_target_line(sweep, target)
        except NotApplicable as line:
            raise NotApplicable(f"{grid}; or {line}") from None


def fig_compute_vs_comm(sweep):
    """5. Per run, projected time split into compute (mean node, summed over steps) and exposed
    communication (the rest)."""
    labels, compute, exposed = [], [], []
    for run in sweep.runs:
        c, e = metrics.compute_and_exposed(run)
        labels.append(run.label)
        compute.append(c)
        exposed.append(e)
    # Run labels are long ("ddp, bandwidth=100 Mbps, latency=10 ms"): each is written above its
    # bar so the bars keep the full column width; the legend gets its own strip below.
    n = len(labels)
    fig, (ax, leg) = style.new_figure(height_in=1.3 + 0.36 * n, nrows=2,
                                      gridspec_kw={"height_ratios": [0.9 + 0.36 * n, 0.25]})
    leg.axis("off")
    y = np.arange(n)
    ax.barh(y, compute, height=0.45, label="compute")
    ax.barh(y, exposed, height=0.45, left=compute, label="exposed communication")
    for i, text in enumerate(labels):
        ax.text(0, i - 0.3, text, va="bottom", ha="left", fontsize=style.FONT_PT)
    ax.set_yticks([])
    ax.set_ylim(n - 0.5, -0.9)  # first run on top, as listed; room for the first label
    ax.set_xlabel("projected time (s)")
    ax.set_ylabel("runs")
    style.add_legend(ax, leg, ncol=2)
    style.caption(fig, sweep, "Compute vs exposed communication.")
    return fig


MAX_PAIRS = 48  # beyond this a bar chart of host pairs is unreadable at column width


def fig_bytes_hotspots(sweep, run):
    """7. Bytes each node sent, and bytes per (src -> dst) host pair from /comm/messages."""
    per_node = metrics.bytes_per_node(run)
    pairs, per_pair = metrics.bytes_per_pair(run)
    note = ""
    if len(pairs) > MAX_PAIRS:
        top = np.sort(np.argsort(per_pair, kind="stable")[::-1][:MAX_PAIRS])
        pairs, per_pair = pairs[top], per_pair[top]
        note = f" Largest {MAX_PAIRS} pairs shown."
    fig, (a_node, a_pair) = style.new_figure(height_in=3.6, nrows=2)
    a_node.bar(np.arange(len(per_node)), per_node.astype(float) / 1e6, label="sent by node")
    a_node.set_xlabel("node")
    a_node.set_ylabel("bytes sent (MB)")
    a_node.set_xticks(np.arange(len(per_node)))
    a_node.margins(y=0.3)  # headroom so the legend never sits on a bar
    a_node.legend(frameon=False, loc="upper right")
    a_pair.bar(np.arange(len(per_pair)), per_pair.astype(float) / 1e6, label="src→dst host pair", color="C1")
    a_pair.set_xticks(np.arange(len(per_pair)), [f"{s}→{d}" for s, d in pairs], rotation=90)
    a_pair.set_xlabel("host pair (src→dst)")
    a_pair.set_ylabel("bytes (MB)")
    a_pair.margins(y=0.3)
    a_pair.legend(frameon=False, loc="upper right")
    style.caption(fig, sweep, f"Bytes per node and per host pair, run {run.label}.{note}", names=[run.name])
    return fig


def fig_accuracy_per_round(sweep):
    """8. Federated runs: accuracy of the server's model after each evaluated round (/rounds, rounds
    numbered from 0)."""
    federated = [run for run in sweep.runs if run.algorithm == "fedavg"]
    if not federated:
        raise NotApplicable("no federated (fedavg) run")
    fig, ax, leg = style.legend_figure(len(federated))
    for i, run in enumerate(federated):
        try:
            # /rounds numbers rounds from 0, as /participation does; NaN where a round had no eval.
            rounds = np.asarray(run.read("/rounds/round"), dtype=np.int64)
            accuracy = np.asarray(run.read("/rounds/accuracy"), dtype=np.float64)
            keep = np.isfinite(accuracy)
            rounds, accuracy = rounds[keep], accuracy[keep]
        except MissingData:  # files from before /rounds held accuracy: the eval's steps, H a round
            H = int(run.flat.get("algorithm.H", 10))
            rounds = np.asarray(run.read("/eval/step"), dtype=np.int64) // H - 1
            accuracy = np.asarray(run.read("/eval/accuracy"), dtype=np.float64)
        ax.plot(rounds, accuracy, label=run.label, **_style_of(i))
    ax.set_xlabel("round")
    ax.set_ylabel("accuracy of the server's model")
    style.add_legend(ax, leg)
    style.caption(fig, sweep, "Accuracy per round (the global model after each round's average).")
    return fig


def step_timeline(run, node, step):
    """(compute seconds, [(kind, start, end)]) of one node's step, times from the step's start:
    each kind of message the node sent during the step (a replica group's or slice's suffix,
    "/g3" or "/s1", dropped) from its first send to its last arrival, in order of first send."""
    time = np.asarray(run.read("/train/time"), dtype=np.float64)
    compute = float(np.asarray(run.read("/train/compute_time"), dtype=np.float64)[step, node])
    start = time[step - 1, node] if step > 0 else 0.0
    end = time[step, node]
    spans = {}
    for m in run.read("/comm/messages"):
        if int(m["src"]) != node or not (start <= float(m["t_send"]) < end):
            continue
        kind = m["kind"].decode() if isinstance(m["kind"], bytes) else str(m["kind"])
        kind = kind.rsplit("/", 1)[0] if "/" in kind else kind
        first, last = spans.get(kind, (np.inf, -np.inf))
        spans[kind] = (min(first, float(m["t_send"]) - start), max(last, float(m["t_recv"]) - start))
    order = sorted(spans.items(), key=lambda item: item[1][0])
    return compute, [(kind, a, b) for kind, (a, b) in order]


def fig_step_timeline(sweep, run, node=0, step=1):
    """12. One node's step as a timeline: its modelled compute and, a row each, every kind of
    collective it sent in (first send to last arrival): FSDP's gathers and reduce-scatters, DDP's
    buckets, an outer sync."""
    compute, spans = step_timeline(run, node, step)
    if not spans:
        raise NotApplicable(f"node {node} sent nothing in step {step}")
    fig, ax = style.new_figure(height_in=0.9 + 0.14 * (len(spans) + 1))
    labels = ["compute"] + [kind for kind, _, _ in spans]
    ax.barh(0, 1000 * compute, left=0, color="C0", height=0.6)
    for i, (kind, a, b) in enumerate(spans, start=1):
        ax.barh(i, 1000 * (b - a), left=1000 * a, color="C1", height=0.6)
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"ms from the start of step {step}")
    style.caption(fig, sweep, f"Node {node}'s step {step}: compute and each collective it sends in, run {run.label}.",
                  names=[run.name])
    return fig


def _safe_stem(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def fig_accuracy_correlation_vs_time(sweep):
    """10. Time-to-accuracy: eval accuracy (top) and replica correlation (bottom) against the
    projected wall-clock time of each eval, as fig 1 times them."""
    fig, axes = style.new_figure(height_in=3.6, nrows=2, ncols=1, squeeze=False)
    top, bottom = axes[0, 0], axes[1, 0]
    xs = []
    for i, run in enumerate(sweep.runs):
        t = metrics.eval_times(run)
        top.plot(t, run.read("/eval/accuracy"), label=run.label, **_style_of(i))
        bottom.plot(t, run.read("/replicas/correlation"), **_style_of(i))
        xs.extend(t)
    for ax in (top, bottom):
        _log_if_wide(ax, "x", xs)
    top.set_ylabel("eval accuracy")
    bottom.set_ylabel("replica correlation (Pearson r)")
    bottom.set_xlabel("projected wall-clock time (s)")
    top.legend(fontsize=style.FONT_PT)
    style.caption(fig, sweep, "Accuracy and replica correlation vs projected time (eval at the slowest node's finish).")
    return fig


def make_all(sweep, out_dir, target_loss=None, only=None, log=print):
    """Write every figure the inputs support. Returns (written paths, errors); a figure whose
    inputs do not apply is skipped with a note, one whose files lack a dataset is an error."""
    # (figure number for --only, file stem, maker; None makes the table)
    jobs = [
        ("1", "fig1_loss_vs_time", lambda: fig_loss_vs_time(sweep)),
        ("2", "fig2_loss_vs_bytes", lambda: fig_loss_vs_bytes(sweep)),
        ("3", "fig3_correlation", lambda: fig_correlation(sweep)),
        ("4", "fig4_time_to_target", lambda: fig_time_to_target_any(sweep, target_loss)),
        ("5", "fig5_compute_vs_comm", lambda: fig_compute_vs_comm(sweep)),
        ("6", "table6_accuracy", None),
        ("8", "fig8_accuracy_per_round", lambda: fig_accuracy_per_round(sweep)),
        ("9", "fig9_iteration_time_vs_bandwidth", lambda: fig_iteration_time_vs_bandwidth(sweep)),
        ("10", "fig10_accuracy_correlation_vs_time", lambda: fig_accuracy_correlation_vs_time(sweep)),
        ("11", "fig11_iteration_time_by_model", lambda: fig_iteration_time_by_model(sweep)),
    ]
    for run in sweep.runs:
        jobs.append(("7", f"fig7_bytes_{_safe_stem(run.stem)}", (lambda r: lambda: fig_bytes_hotspots(sweep, r))(run)))
        # Asked for only (--only 12): a timeline a run is one picture among many.
        if only and "12" in only:
            jobs.append(("12", f"fig12_step_{_safe_stem(run.stem)}", (lambda r: lambda: fig_step_timeline(sweep, r))(run)))
    written, errors = [], []
    for number, stem, make in jobs:
        if only and number not in only:
            continue
        try:
            if make is None:
                paths = tables.write_accuracy_table(sweep, out_dir, stem)
            else:
                paths = style.save(make(), out_dir, stem)
            written.extend(paths)
            log(f"wrote {', '.join(paths)}")
        except NotApplicable as e:
            log(f"skip {stem}: {e}")
        except LoadError as e:
            errors.append(str(e))
    return written, errors


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.figures", description=__doc__)
    parser.add_argument("input", help="a run's .h5 file, or a sweep directory of .h5 files (optionally with sweep.csv)")
    parser.add_argument("--out", default="figures", help="output directory (default: figures)")
    parser.add_argument("--target-loss", type=float, default=None,
                        help="figure 4's target eval loss (default: the highest of the runs' best eval losses)")
    parser.add_argument("--only", default="", help="comma-separated figure numbers to make, e.g. 1,4,6")
    args = parser.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    try:
        sweep = load(args.input)
    except LoadError as e:
        print(e, file=sys.stderr)
        return 2
    _, errors = make_all(sweep, args.out, args.target_loss, only)
    for e in errors:
        print(e, file=sys.stderr)
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
