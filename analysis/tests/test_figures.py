"""Figures: each writes PNG and PDF and plots exactly the series computed here by hand."""

import h5py
import numpy as np
import pytest

from analysis import figures, style
from analysis.figures import NotApplicable
from analysis.load import MissingData, load
from analysis.tests.synth import write_run


def _two_runs(tmp_path):
    write_run(tmp_path / "a.h5", name="cmp", algorithm="ddp")
    # lofi: twice as slow, its own losses and correlations.
    write_run(tmp_path / "b.h5", name="cmp", algorithm="lofi", time_scale=2.0,
              eval_loss=[1.8, 1.1], replicas_correlation=[0.99, 0.4])
    return load(str(tmp_path))


def _lines(fig):
    ax = fig.axes[0]
    return {line.get_label(): (np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
            for line in ax.get_lines()}


def _written(paths):
    png, pdf = paths
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(pdf, "rb") as f:
        assert f.read(5) == b"%PDF-"
    import os
    assert os.path.getsize(png) > 1000 and os.path.getsize(pdf) > 1000


def test_loss_vs_time_lines(tmp_path):
    sweep = _two_runs(tmp_path)
    fig = figures.fig_loss_vs_time(sweep)
    lines = _lines(fig)
    assert set(lines) == {"ddp", "lofi"}
    # evals after steps 3 and 6; slowest node (2x) finishes step k-1 at k * 0.1 * 2 * scale.
    np.testing.assert_allclose(lines["ddp"][0], [0.6, 1.2])
    np.testing.assert_allclose(lines["ddp"][1], [1.5, 0.9])
    np.testing.assert_allclose(lines["lofi"][0], [1.2, 2.4])
    np.testing.assert_allclose(lines["lofi"][1], [1.8, 1.1])
    ax = fig.axes[0]
    assert "(s)" in ax.get_xlabel() and ax.get_ylabel()
    assert ax.get_legend() is not None
    caption = fig._suptitle.get_text().replace("\n", " ")
    assert "Scenario: cmp" in caption and f"source: {tmp_path}" in caption
    _written(style.save(fig, str(tmp_path / "out"), "f1"))


def test_loss_vs_bytes_lines(tmp_path):
    fig = figures.fig_loss_vs_bytes(_two_runs(tmp_path))
    lines = _lines(fig)
    # 600 bytes a step from the three nodes: 1800 after 3 steps, 3600 after 6, in MB.
    np.testing.assert_allclose(lines["ddp"][0], [0.0018, 0.0036])
    np.testing.assert_allclose(lines["lofi"][1], [1.8, 1.1])
    assert "MB" in fig.axes[0].get_xlabel()
    _written(style.save(fig, str(tmp_path / "out"), "f2"))


def test_correlation_lines(tmp_path):
    fig = figures.fig_correlation(_two_runs(tmp_path))
    lines = _lines(fig)
    np.testing.assert_allclose(lines["ddp"][0], [3, 6])
    np.testing.assert_allclose(lines["ddp"][1], [0.95, 0.8])
    np.testing.assert_allclose(lines["lofi"][1], [0.99, 0.4])
    _written(style.save(fig, str(tmp_path / "out"), "f3"))


def test_accuracy_and_correlation_against_projected_time(tmp_path):
    fig = figures.fig_accuracy_correlation_vs_time(_two_runs(tmp_path))
    top = _lines(fig)
    bottom = {line.get_color(): (np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
              for line in fig.axes[1].get_lines()}
    # The evals' projected times as in fig 1 (slowest node, 2x, finishes step k - 1 at
    # k x 0.1 x 2 x scale); synth's accuracies 0.6 and 0.75; lofi's correlations 0.99, 0.4.
    np.testing.assert_allclose(top["ddp"][0], [0.6, 1.2])
    np.testing.assert_allclose(top["ddp"][1], [0.6, 0.75])
    np.testing.assert_allclose(top["lofi"][0], [1.2, 2.4])
    np.testing.assert_allclose(bottom["C0"][0], [0.6, 1.2])
    np.testing.assert_allclose(bottom["C0"][1], [0.95, 0.8])
    np.testing.assert_allclose(bottom["C1"][1], [0.99, 0.4])
    assert "(s)" in fig.axes[1].get_xlabel()
    _written(style.save(fig, str(tmp_path / "out"), "f10"))


def test_correlation_missing_names_file(tmp_path):
    p = write_run(tmp_path / "x.h5", omit=["replicas/correlation"])
    with pytest.raises(MissingData, match=r"x\.h5: missing /replicas/correlation$"):
        figures.fig_correlation(load(p))


# Bandwidth x latency grid: (bandwidth, latency) -> time scale of the run's clock.
SCALE = {("1e+08", 0.001): 2.0, ("1e+09", 0.001): 1.0, ("1e+08", 0.01): 4.0, ("1e+09", 0.01): 3.0}


def _grid_sweep(tmp_path):
    rows = ["run,algorithm.name,topology.link.bandwidth,topology.link.latency,status"]
    for algo in ("ddp", "lofi"):
        for (bw, lat), scale in SCALE.items():
            loss = [1.0, 0.5] if algo == "ddp" else [1.2, 0.8]
            if algo == "lofi" and (bw, lat) == ("1e+08", 0.01):
                loss = [1.3, 1.25]  # the worst run: its best loss is the default target
            run = f"{algo}_{bw}_{lat}"
            write_run(tmp_path / f"{run}.h5", name="grid", algorithm=algo, bandwidth=bw, latency=lat,
                      time_scale=scale, eval_loss=loss)
            rows.append(f"{run},{algo},{'100Mbps' if bw == '1e+08' else '1Gbps'},{lat * 1000:g}ms,completed")
    (tmp_path / "sweep.csv").write_text("\n".join(rows) + "\n")
    return load(str(tmp_path))


def _image(fig, title):
    ax = next(a for a in fig.axes if a.get_title() == title)
    return np.ma.filled(np.ma.asarray(ax.images[0].get_array(), dtype=float), np.nan), ax


def test_time_to_target_heatmap_default_target(tmp_path):
    fig = figures.fig_time_to_target(_grid_sweep(tmp_path))
    assert fig.target_loss == pytest.approx(1.25)
    # rows: latency 1 ms, 10 ms; columns: 100 Mbps, 1 Gbps. Eval times are 0.6 and 1.2 x scale.
    ddp, ax = _image(fig, "ddp")
    np.testing.assert_allclose(ddp, [[0.6 * 2, 0.6 * 1], [0.6 * 4, 0.6 * 3]])
    lofi, _ = _image(fig, "lofi")
    np.testing.assert_allclose(lofi, [[0.6 * 2, 0.6 * 1], [1.2 * 4, 0.6 * 3]])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["100", "1000"]
    assert ax.get_xlabel() == "link bandwidth (Mbit/s)"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "10"]
    assert ax.get_ylabel() == "link latency (ms)"
    assert "1.25" in fig._suptitle.get_text()
    _written(style.save(fig, str(tmp_path / "out"), "f4"))


def test_time_to_target_heatmap_never_reached_is_nan(tmp_path):
    fig = figures.fig_time_to_target(_grid_sweep(tmp_path), target=0.9)
    ddp, _ = _image(fig, "ddp")
    np.testing.assert_allclose(ddp, [[1.2 * 2, 1.2 * 1], [1.2 * 4, 1.2 * 3]])
    lofi, _ = _image(fig, "lofi")
    np.testing.assert_allclose(lofi, [[1.2 * 2, 1.2 * 1], [np.nan, 1.2 * 3]])


def test_heatmap_not_applicable_without_grid(tmp_path):
    with pytest.raises(NotApplicable, match="bandwidth and topology.link.latency"):
        figures.fig_time_to_target(_two_runs(tmp_path))


def test_compute_vs_exposed_bars(tmp_path):
    fig = figures.fig_compute_vs_comm(_two_runs(tmp_path))
    ax = fig.axes[0]
    compute, exposed = ax.containers
    # 6 steps x 0.05 s compute; projected 1.2 s (ddp) and 2.4 s (lofi, clock x2).
    np.testing.assert_allclose([b.get_width() for b in compute], [0.3, 0.3])
    np.testing.assert_allclose([b.get_width() for b in exposed], [0.9, 2.1])
    np.testing.assert_allclose([b.get_x() for b in exposed], [0.3, 0.3])  # stacked on compute
    assert [t.get_text() for t in ax.texts] == ["ddp", "lofi"]  # each run's label above its bar
    assert ax.get_xlabel() == "projected time (s)"
    _written(style.save(fig, str(tmp_path / "out"), "f5"))


def test_step_timeline_bars(tmp_path):
    # Node 0's step 2 runs from 0.2 s to 0.3 s (synth: step s of node 0 ends at (s + 1) 0.1 s);
    # it sends one message, 0.2 -> 0.3 s: a bar from 0 to 100 ms beside 50 ms of compute. Its
    # step 1 sends nothing.
    sweep = _two_runs(tmp_path)
    run = sweep.runs[0]
    compute, spans = figures.step_timeline(run, 0, 2)
    assert compute == pytest.approx(0.05)
    assert [k for k, _, _ in spans] == ["allreduce"]
    assert spans[0][1] == pytest.approx(0.0) and spans[0][2] == pytest.approx(0.1)
    fig = figures.fig_step_timeline(sweep, run, 0, 2)
    bars = fig.axes[0].patches
    assert [b.get_width() for b in bars] == pytest.approx([50.0, 100.0])
    assert [b.get_x() for b in bars] == pytest.approx([0.0, 0.0])
    with pytest.raises(NotApplicable):
        figures.fig_step_timeline(sweep, run, 0, 1)
    _written(style.save(fig, str(tmp_path / "out"), "f12"))


def test_bytes_hotspot_bars(tmp_path):
    sweep = _two_runs(tmp_path)
    fig = figures.fig_bytes_hotspots(sweep, sweep.runs[0])
    node_ax, pair_ax = fig.axes
    np.testing.assert_allclose([b.get_height() for b in node_ax.patches], [600e-6, 1200e-6, 1800e-6])
    np.testing.assert_allclose([b.get_height() for b in pair_ax.patches], [600e-6, 700e-6, 50e-6])
    assert [t.get_text() for t in pair_ax.get_xticklabels()] == ["0→1", "1→2", "2→0"]
    _written(style.save(fig, str(tmp_path / "out"), "f7"))


def test_fonts_at_least_8pt_and_column_width(tmp_path):
    fig = figures.fig_loss_vs_time(_two_runs(tmp_path))
    assert fig.get_figwidth() == pytest.approx(3.5)
    ax = fig.axes[0]
    texts = [ax.xaxis.label, ax.yaxis.label, fig._suptitle] + ax.get_xticklabels() + ax.get_legend().get_texts()
    assert min(t.get_fontsize() for t in texts) >= 8


def test_heatmap_cell_averages_seeds_and_marks_cells_without_runs(tmp_path):
    # Two seeds in one cell (times 0.6 x 1 and 0.6 x 3 to reach loss 1.5), one cell with no run.
    for seed, scale in ((0, 1.0), (1, 3.0)):
        write_run(tmp_path / f"a{seed}.h5", name=f"s{seed}", bandwidth="1e+08", latency=0.001, time_scale=scale)
    write_run(tmp_path / "b.h5", name="b", bandwidth="1e+09", latency=0.001)
    write_run(tmp_path / "c.h5", name="c", bandwidth="1e+08", latency=0.01, time_scale=2.0)
    fig = figures.fig_time_to_target(load(str(tmp_path)), target=1.5)
    grid, ax = _image(fig, "ddp")
    np.testing.assert_allclose(grid, [[(0.6 + 1.8) / 2, 0.6], [1.2, np.nan]])
    assert "no run" in [t.get_text() for t in ax.texts]


def test_default_target_ignores_runs_without_finite_loss(tmp_path):
    write_run(tmp_path / "a.h5", eval_loss=[1.5, 0.9])
    write_run(tmp_path / "b.h5", eval_loss=[np.nan, np.nan], status="diverged")
    write_run(tmp_path / "c.h5", eval_loss=[1.4, 1.1])
    assert figures.default_target(load(str(tmp_path))) == pytest.approx(1.1)


def test_accuracy_per_round_lines(tmp_path):
    # Two federated runs of H = 3 (the synthetic runs' eval_every) in files without /rounds:
    # evals after steps 3 and 6 are rounds 0 and 1 (numbered from 0, as /rounds does).
    write_run(tmp_path / "a.h5", name="fl", algorithm="fedavg")
    write_run(tmp_path / "b.h5", name="fl", algorithm="fedavg", eval_accuracy=[0.5, 0.8], eval_loss=[1.8, 1.1])
    sweep = load(str(tmp_path))
    for run in sweep.runs:
        run.flat["algorithm.H"] = 3
    fig = figures.fig_accuracy_per_round(sweep)
    ax = fig.axes[0]
    ys = sorted(tuple(line.get_ydata()) for line in ax.get_lines())
    assert ys == [(0.5, 0.8), (0.6, 0.75)]
    for line in ax.get_lines():
        np.testing.assert_allclose(line.get_xdata(), [0, 1])
    assert ax.get_xlabel() == "round"
    _written(style.save(fig, str(tmp_path / "out"), "f8"))


def test_accuracy_per_round_reads_rounds_and_skips_rounds_without_an_eval(tmp_path):
    write_run(tmp_path / "a.h5", name="fl", algorithm="fedavg",
              datasets={"rounds/round": [0, 1, 2, 3], "rounds/accuracy": [0.3, np.nan, 0.5, 0.6]})
    fig = figures.fig_accuracy_per_round(load(str(tmp_path / "a.h5")))
    (line,) = fig.axes[0].get_lines()
    np.testing.assert_allclose(line.get_xdata(), [0, 2, 3])
    np.testing.assert_allclose(line.get_ydata(), [0.3, 0.5, 0.6])


def test_accuracy_per_round_needs_a_federated_run(tmp_path):
    with pytest.raises(NotApplicable, match="federated"):
        figures.fig_accuracy_per_round(_two_runs(tmp_path))


def _bandwidth_sweep(tmp_path, key="topology.link.bandwidth"):
    # Two algorithms x three bandwidths, written in units as the resolved scenario holds them;
    # each run 6 steps, its projected time 1.2 x scale (synth: node 2 finishes step 5 at 0.6 x 2).
    rows = ["run," + key + ",status"]
    for algo, scales in (("ddp", (4.0, 2.0, 1.0)), ("powersgd", (1.5, 1.5, 1.5))):
        for bw, scale in zip(("10Mbps", "100Mbps", "1Gbps"), scales):
            run = f"{algo}_{bw}"
            write_run(tmp_path / f"{run}.h5", name="bw", algorithm=algo, bandwidth=bw, time_scale=scale,
                      summary={"projected_time_s": 1.2 * scale, "steps_completed": 6, "total_bytes": 1})
            rows.append(f"{run},{bw},completed")
    (tmp_path / "sweep.csv").write_text("\n".join(rows) + "\n")
    return load(str(tmp_path))


def test_iteration_time_and_throughput_against_bandwidth(tmp_path):
    fig = figures.fig_iteration_time_vs_bandwidth(_bandwidth_sweep(tmp_path))
    time_ax, rate_ax = fig.axes[0], fig.axes[1]
    lines = {l.get_label(): l for l in time_ax.get_lines()}
    assert sorted(lines) == ["ddp", "powersgd"]
    # ms per iteration: projected time / 6 steps; throughput: 3 nodes x batch (synth: none given, 1) / that.
    np.testing.assert_allclose(lines["ddp"].get_xdata(), [10, 100, 1000])
    np.testing.assert_allclose(lines["ddp"].get_ydata(), [1.2 * 4 / 6 * 1e3, 1.2 * 2 / 6 * 1e3, 1.2 / 6 * 1e3])
    np.testing.assert_allclose(lines["powersgd"].get_ydata(), [1.2 * 1.5 / 6 * 1e3] * 3)
    ddp_rate = rate_ax.get_lines()[0]
    np.testing.assert_allclose(ddp_rate.get_ydata(), [3 / (1.2 * 4 / 6), 3 / (1.2 * 2 / 6), 3 / (1.2 / 6)])
    assert rate_ax.get_xlabel() == "link bandwidth (Mbit/s)"
    _written(style.save(fig, str(tmp_path / "out"), "f9"))


def test_iteration_time_follows_any_swept_link(tmp_path):
    fig = figures.fig_iteration_time_vs_bandwidth(_bandwidth_sweep(tmp_path, key="topology.wan.bandwidth"))
    assert fig.axes[1].get_xlabel() == "wan bandwidth (Mbit/s)"


def test_iteration_time_needs_one_swept_bandwidth(tmp_path):
    with pytest.raises(NotApplicable, match="exactly one link bandwidth"):
        figures.fig_iteration_time_vs_bandwidth(_two_runs(tmp_path))


def _zoo_sweep(tmp_path):
    # Two models (cnn and mlp, via synth's scenario text) x two algorithms x two bandwidths; each
    # run's projected time given, 6 steps.
    rows = ["run,topology.link.bandwidth,workload.model,algorithm.name,status"]
    times = {}
    for model in ("cnn", "mlp"):
        for algo in ("ddp", "diloco"):
            for bw in ("100Mbps", "1Gbps"):
                run = f"{model}_{algo}_{bw}"
                t = {"cnn": 1.0, "mlp": 2.0}[model] * {"ddp": 3.0, "diloco": 1.0}[algo] * {"100Mbps": 10, "1Gbps": 1}[bw]
                times[(model, algo, bw)] = t
                path = write_run(tmp_path / f"{run}.h5", name="zoo", algorithm=algo, bandwidth=bw,
                                 summary={"projected_time_s": t, "steps_completed": 6, "total_bytes": 1})
                if model == "mlp":  # synth writes cnn: rewrite the model in the scenario text
                    with h5py.File(path, "a") as f:
                        f.attrs["scenario"] = f.attrs["scenario"].replace("model: cnn", "model: mlp")
                rows.append(f"{run},{bw},{model},{algo},completed")
    (tmp_path / "sweep.csv").write_text("\n".join(rows) + "\n")
    return load(str(tmp_path)), times


def test_iteration_time_by_model_panels(tmp_path):
    sweep, times = _zoo_sweep(tmp_path)
    fig = figures.fig_iteration_time_by_model(sweep)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["cnn", "mlp"]
    for ax, model in zip(panels, ("cnn", "mlp")):
        lines = {l.get_label(): l for l in ax.get_lines()}
        assert sorted(lines) == ["ddp", "diloco"]
        np.testing.assert_allclose(lines["ddp"].get_xdata(), [100, 1000])
        # ms per iteration: projected time / 6 steps, by hand from the times written above.
        np.testing.assert_allclose(lines["diloco"].get_ydata(),
                                   [times[(model, "diloco", bw)] / 6 * 1e3 for bw in ("100Mbps", "1Gbps")])
        assert lines["ddp"].get_color() == panels[0].get_lines()[0].get_color()  # one colour an algorithm
    _written(style.save(fig, str(tmp_path / "out"), "f11"))


def test_iteration_time_by_model_needs_two_models(tmp_path):
    with pytest.raises(NotApplicable, match="two models"):
        figures.fig_iteration_time_by_model(_bandwidth_sweep(tmp_path))


def test_time_to_target_of_a_one_factor_sweep_is_a_line(tmp_path):
    # Eval losses 1.5 then 0.9 at eval times 0.6 and 1.2 x scale: target 1.0 is reached at the second.
    fig = figures.fig_time_to_target_any(_bandwidth_sweep(tmp_path), target=1.0)
    lines = _lines(fig)
    np.testing.assert_allclose(lines["ddp"][1], [1.2 * 4, 1.2 * 2, 1.2 * 1])
    np.testing.assert_allclose(lines["powersgd"][1], [1.2 * 1.5] * 3)
    assert fig.target_loss == 1.0
