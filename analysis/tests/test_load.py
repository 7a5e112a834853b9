"""Loader: run records, sweep manifests, swept keys, labels, derived metrics, error messages."""

import os

import numpy as np
import pytest

from analysis import metrics
from analysis.load import LoadError, MissingData, load, load_run, load_sweep
from analysis.tests.synth import MESSAGE, write_run


def test_run_record_has_scenario_status_summary(tmp_path):
    p = write_run(tmp_path / "a.h5", name="alpha", algorithm="diloco", status="diverged")
    run = load_run(p)
    assert run.name == "alpha"
    assert run.algorithm == "diloco"
    assert run.status == "diverged"
    assert run.summary["projected_time_s"] == pytest.approx(0.6 * 2)  # node 2 at step 5: 6 * 0.1 * 2
    assert run.flat["topology.link.latency"] == 0.01
    assert run.variants() == ["noise", "rotation"]
    assert run.read("/comm/bytes").dtype == np.uint64


def test_missing_dataset_names_file_and_path(tmp_path):
    p = write_run(tmp_path / "x.h5", omit=["replicas/correlation"])
    run = load_run(p)
    with pytest.raises(MissingData) as e:
        run.read("/replicas/correlation")
    assert str(e.value) == f"{p}: missing /replicas/correlation"


def test_not_a_file_and_not_hdf5(tmp_path):
    with pytest.raises(LoadError, match="no such file"):
        load(str(tmp_path / "nope.h5"))
    bad = tmp_path / "bad.h5"
    bad.write_text("not hdf5")
    with pytest.raises(LoadError, match="bad.h5: not a readable HDF5 file"):
        load(str(bad))


def test_sweep_manifest_gives_swept_keys_and_resolved_values(tmp_path):
    write_run(tmp_path / "r0.h5", name="bw_0", bandwidth="1e+08", latency=0.001)
    write_run(tmp_path / "r1.h5", name="bw_1", bandwidth="1e+09", latency=0.001)
    (tmp_path / "sweep.csv").write_text(
        "run,topology.link.bandwidth,status,projected_time_s\nr1,1Gbps,completed,1.2\nr0,100Mbps,completed,1.2\n")
    sweep = load_sweep(str(tmp_path))
    assert sweep.swept == ["topology.link.bandwidth"]
    assert [r.stem for r in sweep.runs] == ["r1", "r0"]  # manifest order
    assert [float(r.params["topology.link.bandwidth"]) for r in sweep.runs] == [1e9, 1e8]
    assert [r.label for r in sweep.runs] == ["bandwidth=1 Gbps", "bandwidth=100 Mbps"]


def test_grid_key_with_one_value_is_no_factor(tmp_path):
    write_run(tmp_path / "r0.h5", name="bw_0", bandwidth="1e+08", latency=0.001)
    write_run(tmp_path / "r1.h5", name="bw_1", bandwidth="1e+09", latency=0.001)
    (tmp_path / "sweep.csv").write_text(
        "run,topology.link.bandwidth,topology.link.latency,status\n"
        "r0,100Mbps,1ms,completed\nr1,1Gbps,1ms,completed\n")
    sweep = load_sweep(str(tmp_path))
    assert sweep.swept == ["topology.link.bandwidth"]
    assert [r.label for r in sweep.runs] == ["bandwidth=100 Mbps", "bandwidth=1 Gbps"]


def test_manifest_row_without_file_is_skipped_and_stray_files_kept(tmp_path):
    write_run(tmp_path / "r0.h5", name="a")
    write_run(tmp_path / "extra.h5", name="b", algorithm="lofi")
    (tmp_path / "sweep.csv").write_text("run,algorithm.name,status\nr0,ddp,completed\ngone,ddp,failed\n")
    sweep = load_sweep(str(tmp_path))
    assert [r.stem for r in sweep.runs] == ["r0", "extra"]
    assert [r.label for r in sweep.runs] == ["ddp", "lofi"]


def test_manifest_without_status_column_is_an_error(tmp_path):
    write_run(tmp_path / "r0.h5")
    (tmp_path / "sweep.csv").write_text("run,algorithm.name\nr0,ddp\n")
    with pytest.raises(LoadError, match="sweep.csv: no 'status' column"):
        load_sweep(str(tmp_path))


def test_without_manifest_differing_keys_are_swept(tmp_path):
    write_run(tmp_path / "a.h5", name="a", algorithm="ddp", latency=0.01)
    write_run(tmp_path / "b.h5", name="b", algorithm="lofi", latency=0.02)
    sweep = load_sweep(str(tmp_path))
    # name and output.path differ too but are not factors.
    assert sorted(sweep.swept) == ["algorithm.name", "topology.link.latency"]
    assert [r.label for r in sweep.runs] == ["ddp, latency=10 ms", "lofi, latency=20 ms"]


def test_same_algorithm_unrelated_runs_get_distinct_labels(tmp_path):
    write_run(tmp_path / "a.h5", name="same")
    write_run(tmp_path / "b.h5", name="same")
    sweep = load_sweep(str(tmp_path))
    assert [r.label for r in sweep.runs] == ["ddp (a)", "ddp (b)"]


def test_eval_time_is_slowest_node_at_step_before_eval(tmp_path):
    run = load_run(write_run(tmp_path / "a.h5"))
    # eval after 3 steps: row 2, node 2 (1 + 0.5 * 2 = 2x slower): 3 * 0.1 * 2.
    assert metrics.eval_times(run) == pytest.approx([0.6, 1.2])
    # bytes per step: 100 + 200 + 300; three and six steps of it.
    assert metrics.eval_bytes(run) == pytest.approx([1800, 3600])


def test_eval_time_ignores_nodes_that_did_not_finish(tmp_path):
    time = np.array([[0.1, 0.2], [0.3, np.nan], [np.nan, np.nan]])
    run = load_run(write_run(tmp_path / "d.h5", steps=3, nodes=2, train_time=time,
                             eval_step=np.array([0, 2, 3]), eval_loss=np.array([2.0, 1.0, np.nan]),
                             status="diverged"))
    t = metrics.eval_times(run)
    assert t[0] == 0.0 and t[1] == pytest.approx(0.3) and np.isnan(t[2])


def test_compute_exposed_and_byte_totals(tmp_path):
    run = load_run(write_run(tmp_path / "a.h5"))
    compute, exposed = metrics.compute_and_exposed(run)
    assert compute == pytest.approx(6 * 0.05)
    assert exposed == pytest.approx(1.2 - 0.3)
    assert list(metrics.bytes_per_node(run)) == [600, 1200, 1800]
    pairs, totals = metrics.bytes_per_pair(run)
    assert [tuple(p) for p in pairs] == [(0, 1), (1, 2), (2, 0)]
    assert list(totals) == [600, 700, 50]


def test_a_collective_recorded_as_one_row_has_no_pairs(tmp_path):
    # A collective past /comm's messages_one_row_above is one row with src and dst -1: its
    # bytes belong to no pair (summing it in would add a pair (-1, -1), or wrap to 2^32 - 1).
    messages = np.array([(0, 1, 500, 0.0, 0.1, 0, b"allreduce"), (-1, -1, 9000, 0.0, 0.4, 0, b"allreduce"),
                         (2, 0, 50, 0.2, 0.3, 0, b"allreduce")], dtype=MESSAGE)
    run = load_run(write_run(tmp_path / "o.h5", comm_messages=messages))
    pairs, totals = metrics.bytes_per_pair(run)
    assert [tuple(p) for p in pairs] == [(0, 1), (2, 0)]
    assert list(totals) == [500, 50]


def test_killed_run_without_summary_uses_last_finish(tmp_path):
    run = load_run(write_run(tmp_path / "k.h5", summary={}))
    # No /summary attrs: the projected time falls back to the last node's finish.
    assert metrics.projected_time(run) == pytest.approx(1.2)
    assert os.path.basename(run.path) == "k.h5"


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(LoadError, match="no .h5 result files"):
        load_sweep(str(tmp_path))


def test_manifest_cells_with_spaces(tmp_path):
    write_run(tmp_path / "r0.h5", name="a", latency=0.001)
    write_run(tmp_path / "r1.h5", name="b", latency=0.01)
    (tmp_path / "sweep.csv").write_text("run, topology.link.latency, status\nr0, 1ms, completed\nr1, 10ms, completed\n")
    sweep = load_sweep(str(tmp_path))
    assert [r.label for r in sweep.runs] == ["latency=1 ms", "latency=10 ms"]


def test_quantities_in_units_read_as_base_units(tmp_path):
    from analysis.load import quantity

    assert quantity("100Mbps") == 1e8
    assert quantity("1gbps") == 1e9  # case does not matter ...
    assert quantity("1gb/s") == "1gb/s"  # ... except byte against bit
    assert quantity("2.039TB/s") == 2.039e12
    assert quantity("5us") == 5e-6
    assert quantity("50ms") == 0.05
    assert quantity("0s") == 0.0
    assert quantity("82.6TFLOPS") == 82.6e12
    assert quantity("1.5bdp") == "1.5bdp"
    assert quantity("ring") == "ring"
    # What `testbed validate` and the file's scenario attribute now write: units, read as numbers.
    run = load_run(write_run(tmp_path / "u.h5", bandwidth="100Mbps", latency="10ms"))
    assert run.flat["topology.link.bandwidth"] == 1e8
    assert run.flat["topology.link.latency"] == 0.01
