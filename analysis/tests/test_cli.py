"""The command line: files written, figures skipped with a note, exit code 2 on missing data."""

import contextlib
import io
import os
import subprocess
import sys
import types

from analysis import figures
from analysis.tests.synth import write_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli(*args):
    """`python3 -m analysis.figures ARGS` in this process (its main(), without a new interpreter
    importing matplotlib each time); test_module_entry_point runs the real command once."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = figures.main([str(a) for a in args])
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_module_entry_point(tmp_path):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "analysis.figures", str(tmp_path / "nothing.h5"), "--out",
                        str(tmp_path / "figs")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "nothing.h5: no such file" in r.stderr


def test_single_run_writes_figures_and_skips_heatmap(tmp_path):
    p = write_run(tmp_path / "a.h5", name="one")
    out = tmp_path / "figs"
    r = _cli(p, "--out", out)
    assert r.returncode == 0, r.stderr
    names = set(os.listdir(out))
    for stem in ("fig1_loss_vs_time", "fig2_loss_vs_bytes", "fig3_correlation", "fig5_compute_vs_comm", "fig7_bytes_a"):
        assert {stem + ".png", stem + ".pdf"} <= names
        assert os.path.getsize(out / (stem + ".pdf")) > 0
    assert {"table6_accuracy.md", "table6_accuracy.tex"} <= names
    assert not any(n.startswith("fig4") for n in names)
    assert "skip fig4_time_to_target:" in r.stdout


def test_missing_dataset_exits_2_with_message(tmp_path):
    p = write_run(tmp_path / "x.h5", omit=["replicas/correlation"])
    r = _cli(p, "--out", tmp_path / "figs", "--only", "3")
    assert r.returncode == 2
    assert r.stderr.strip() == f"{p}: missing /replicas/correlation"


def test_missing_dataset_still_writes_the_other_figures(tmp_path):
    p = write_run(tmp_path / "x.h5", omit=["comm/messages"])
    r = _cli(p, "--out", tmp_path / "figs")
    assert r.returncode == 2
    assert f"{p}: missing /comm/messages" in r.stderr
    assert os.path.exists(tmp_path / "figs" / "fig1_loss_vs_time.pdf")


def test_no_such_input_exits_2(tmp_path):
    r = _cli(tmp_path / "nothing.h5", "--out", tmp_path / "figs")
    assert r.returncode == 2
    assert "nothing.h5: no such file" in r.stderr


def test_target_loss_option(tmp_path):
    for bw in ("1e+08", "1e+09"):
        for lat in (0.001, 0.01):
            write_run(tmp_path / f"r_{bw}_{lat}.h5", name="g", bandwidth=bw, latency=lat)
    r = _cli(tmp_path, "--out", tmp_path / "figs", "--only", "4", "--target-loss", "1.0")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path / "figs")) == ["fig4_time_to_target.pdf", "fig4_time_to_target.png"]
