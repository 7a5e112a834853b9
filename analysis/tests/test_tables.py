"""Table 6: final accuracy in distribution and under shifts, as Markdown and LaTeX."""

import math

from analysis import tables
from analysis.load import load
from analysis.tests.synth import write_run


def test_accuracy_table_rows(tmp_path):
    write_run(tmp_path / "a.h5", name="t", algorithm="ddp")
    # lofi was evaluated on noise only, with its own numbers.
    write_run(tmp_path / "b.h5", name="t", algorithm="lofi", omit=["eval/variants/rotation/loss",
              "eval/variants/rotation/accuracy"], eval_accuracy=[0.3, 0.812345],
              datasets={"eval/variants/noise/accuracy": [0.2, 0.6]})
    sweep = load(str(tmp_path))
    header, rows = tables.accuracy_table(sweep)
    assert header == ["run", "accuracy", "noise accuracy", "rotation accuracy"]
    assert rows[0] == ["ddp", 0.75, 0.55, 0.45]  # last values of the known series
    assert rows[1][:3] == ["lofi", 0.812345, 0.6] and math.isnan(rows[1][3])


def test_markdown_and_latex_files(tmp_path):
    write_run(tmp_path / "a.h5", name="my_scen", algorithm="sparta_diloco")
    out = tmp_path / "out"
    md_path, tex_path = tables.write_accuracy_table(load(str(tmp_path / "a.h5")), str(out))
    md = open(md_path).read().splitlines()
    assert md[0] == "| run | accuracy | noise accuracy | rotation accuracy |"
    assert md[2] == "| sparta_diloco | 0.7500 | 0.5500 | 0.4500 |"
    assert "my_scen" in md[-1]
    tex = open(tex_path).read()
    assert r"\begin{tabular}{lrrr}" in tex
    assert r"sparta\_diloco & 0.7500 & 0.5500 & 0.4500 \\" in tex
    assert r"\caption{" in tex and r"my\_scen" in tex


def test_missing_shift_is_a_dash(tmp_path):
    write_run(tmp_path / "a.h5", name="t", algorithm="ddp")
    write_run(tmp_path / "b.h5", name="t", algorithm="lofi", omit=["eval/variants/rotation/loss",
              "eval/variants/rotation/accuracy"])
    sweep = load(str(tmp_path))
    header, rows = tables.accuracy_table(sweep)
    md = tables.to_markdown(sweep, header, rows)
    assert "| lofi | 0.7500 | 0.5500 | — |" in md
    assert r"lofi & 0.7500 & 0.5500 & -- \\" in tables.to_latex(sweep, header, rows)
