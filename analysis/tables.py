"""Table 6: final accuracy in distribution and under each shift, one row per run (Markdown, LaTeX)."""

import math
import os

import numpy as np

from analysis import style


def _last(values):
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    return float(a[-1]) if len(a) else float("nan")


def accuracy_table(sweep):
    """(header, rows): run label, final /eval/accuracy, then the final accuracy on each shift
    any run was evaluated on (NaN where a run lacks that shift)."""
    shifts = []
    for run in sweep.runs:
        for s in run.variants():
            if s not in shifts:
                shifts.append(s)
    header = ["run", "accuracy"] + [f"{s} accuracy" for s in shifts]
    rows = []
    for run in sweep.runs:
        row = [run.label, _last(run.read("/eval/accuracy"))]
        have = set(run.variants())
        for s in shifts:
            row.append(_last(run.read(f"/eval/variants/{s}/accuracy")) if s in have else float("nan"))
        rows.append(row)
    return header, rows


def _fmt(v, missing):
    if isinstance(v, float):
        return missing if math.isnan(v) else f"{v:.4f}"
    return str(v)


def _caption(sweep):
    return (f"Final accuracy of the averaged model, in distribution and under each shift "
            f"(last eval). Scenario: {style.scenario_text(sweep)}; source: {sweep.source}")


def to_markdown(sweep, header, rows):
    esc = lambda s: str(s).replace("|", "\\|")
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(esc(_fmt(v, "—")) for v in row) + " |")
    return "\n".join(lines) + f"\n\n*{esc(_caption(sweep))}*\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text):
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def to_latex(sweep, header, rows):
    cols = "l" + "r" * (len(header) - 1)
    out = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{cols}}}", r"\toprule",
           " & ".join(latex_escape(h) for h in header) + r" \\", r"\midrule"]
    for row in rows:
        out.append(" & ".join(latex_escape(_fmt(v, "--")) for v in row) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(_caption(sweep))}}}",
            r"\label{tab:accuracy}", r"\end{table}"]
    return "\n".join(out) + "\n"


def write_accuracy_table(sweep, out_dir, stem="table6_accuracy"):
    """Write stem.md and stem.tex; return both paths."""
    header, rows = accuracy_table(sweep)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for ext, text in (("md", to_markdown(sweep, header, rows)), ("tex", to_latex(sweep, header, rows))):
        p = os.path.join(out_dir, f"{stem}.{ext}")
        with open(p, "w") as f:
            f.write(text)
        paths.append(p)
    return paths
