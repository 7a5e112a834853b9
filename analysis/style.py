"""Paper style for every figure: Agg backend, single-column size, >= 8 pt fonts, captions, saving."""

import os
import textwrap

import matplotlib

matplotlib.use("Agg")  # headless and deterministic; set before anything imports pyplot

from matplotlib.figure import Figure  # noqa: E402  (after the backend choice)

COLUMN_WIDTH_IN = 3.5  # one column of a two-column paper
FONT_PT = 8

RC = {
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": FONT_PT,
    "figure.titlesize": FONT_PT,
    "lines.linewidth": 1.2,
    "lines.markersize": 3,
    "axes.linewidth": 0.6,
    "pdf.fonttype": 42,  # embed TrueType, so the PDF's text stays text (editable, searchable)
    "ps.fonttype": 42,
    "savefig.dpi": 300,
}
matplotlib.rcParams.update(RC)


def new_figure(height_in=2.6, width_in=COLUMN_WIDTH_IN, **subplots):
    """A Figure not registered with pyplot (no global state, freed when dropped)."""
    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    axes = fig.subplots(**subplots) if subplots else fig.subplots()
    return fig, axes


def scenario_text(sweep, names=None):
    """The scenario name, or for a sweep of differently named runs, the count and the first name."""
    names = names if names is not None else sweep.names()
    return names[0] if len(names) == 1 else f"{len(names)} scenarios ({names[0]}, ...)"


def caption(fig, sweep, text="", names=None):
    """Caption line: what the figure shows, the scenario name(s) (`names` narrows them, e.g. to
    one run of the sweep), and where the runs came from."""
    line = f"{text} Scenario: {scenario_text(sweep, names)}; source: {sweep.source}".strip()
    # Paths are not broken at hyphens or mid-word: the caption must name them whole.
    fig.suptitle(textwrap.fill(line, 54, break_on_hyphens=False, break_long_words=False), fontsize=FONT_PT)


def legend_figure(n_entries, height_in=2.4):
    """A figure with one plot and, for more than three runs, a legend panel below it sized to
    the entries (a legend inside the axes would hide the lines or squeeze the plot)."""
    if n_entries <= 3:
        fig, ax = new_figure(height_in)
        return fig, ax, ax
    rows = n_entries  # one entry per line: labels like "ddp, bandwidth=100 Mbps, latency=10 ms" are long
    leg_h = 0.16 * rows + 0.1
    fig, (ax, leg) = new_figure(height_in + leg_h, nrows=2, gridspec_kw={"height_ratios": [height_in, leg_h]})
    leg.axis("off")
    return fig, ax, leg


def add_legend(ax, where, ncol=1):
    """Legend of ax's artists, inside ax or filling the panel `where` below it."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    if where is ax:
        ax.legend(frameon=False, handlelength=1.5)
    else:
        where.legend(handles, labels, frameon=False, loc="upper center", handlelength=1.5, borderaxespad=0,
                     ncol=ncol)


def save(fig, out_dir, stem):
    """Write stem.png and stem.pdf (vector) into out_dir; return both paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        p = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(p)
        paths.append(p)
    return paths


def short_key(dotted):
    """`topology.link.bandwidth` -> `bandwidth`: legends stay narrow at column width."""
    return dotted.rsplit(".", 1)[-1]


def _si(value, unit, steps=((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))):
    for scale, prefix in steps:
        if abs(value) >= scale:
            return f"{value / scale:g} {prefix}{unit}"
    return f"{value:g} {unit}"


def format_value(key, value):
    """A swept value as a reader expects it: 1e+08 bandwidth -> '100 Mbps', 0.01 latency -> '10 ms'."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if key.endswith("bandwidth"):
        return _si(x, "bps")
    if key.endswith("latency") or key.endswith("rto") or key.endswith("timeout"):
        if x == 0:
            return "0 s"
        if x < 1e-3:
            return f"{x * 1e6:g} us"
        if x < 1:
            return f"{x * 1e3:g} ms"
        return f"{x:g} s"
    if isinstance(value, str):
        return value
    return f"{x:g}"
