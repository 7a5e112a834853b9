"""Frames: a run's (step, node) rows and a sweep's run rows, against values worked by hand."""

import numpy as np
import pytest

from analysis.frames import run_frame, sweep_frame, sweep_steps
from analysis.load import LoadError, MissingData
from analysis.tests.synth import MESSAGE, write_run


def test_run_frame_by_hand(tmp_path):
    # synth's base run: node n finishes step s at (s + 1) 0.1 (1 + 0.5 n), computes 0.05 s a
    # step, sends 100 (n + 1) bytes a step, loss 2.0 - 0.1 s; evals after 3 and 6 steps. Node 1
    # sends a datagram message at 0.16 s (its step 1 runs from 0.15 to 0.30) that lost 300 bytes,
    # and a collective kept as one row lost 50 (no node to charge).
    messages = np.array([(1, 2, 700, 0.16, 0.2, 300, b"gossip"), (-1, -1, 900, 0.0, 0.3, 50, b"allreduce")],
                        dtype=MESSAGE)
    p = write_run(tmp_path / "a.h5", datasets={"comm/messages": messages})
    f = run_frame(p)
    assert list(f.columns) == ["step", "node", "step_time", "compute", "exposed_comm", "bytes", "lost_bytes", "loss",
                               "accuracy"]
    assert len(f) == 6 * 3
    row = f[(f.step == 4) & (f.node == 2)].iloc[0]
    assert row.step_time == pytest.approx(0.2)       # 5 x 0.1 x 2 - 4 x 0.1 x 2
    assert row.compute == pytest.approx(0.05)
    assert row.exposed_comm == pytest.approx(0.15)
    assert row.bytes == 300
    assert row.loss == pytest.approx(1.6)
    first = f[(f.step == 0) & (f.node == 1)].iloc[0]
    assert first.step_time == pytest.approx(0.15)    # from 0, not from a previous step
    assert f.lost_bytes.sum() == 300
    assert f[(f.step == 1) & (f.node == 1)].iloc[0].lost_bytes == 300
    # The evaluation after 3 steps belongs to step 2, after 6 to step 5.
    accuracy = f[f.node == 0].set_index("step").accuracy
    assert accuracy[2] == pytest.approx(0.6)
    assert accuracy[5] == pytest.approx(0.75)
    assert accuracy[[0, 1, 3, 4]].isna().all()


def test_a_step_never_finished_has_no_time(tmp_path):
    time = (np.arange(1, 4)[:, None] * 0.1 * np.ones((1, 2)))
    time[2, 1] = np.nan  # a stopped run: node 1 never finished step 2
    p = write_run(tmp_path / "s.h5", steps=3, nodes=2, datasets={"train/time": time})
    f = run_frame(p)
    assert np.isnan(f[(f.step == 2) & (f.node == 1)].iloc[0].step_time)
    assert f[(f.step == 2) & (f.node == 0)].iloc[0].step_time == pytest.approx(0.1)


def test_run_frame_names_what_is_missing(tmp_path):
    p = write_run(tmp_path / "m.h5", omit=["train/compute_time"])
    with pytest.raises(MissingData) as e:
        run_frame(p)
    assert str(e.value) == f"{p}: missing /train/compute_time"
    with pytest.raises(LoadError):
        run_frame(str(tmp_path / "none.h5"))


def test_sweep_frames(tmp_path):
    write_run(tmp_path / "bandwidth=1Gbps,seed=0.h5", steps=2, nodes=2)
    (tmp_path / "sweep.csv").write_text(
        "run,topology.link.bandwidth,seed,status,exit_code,projected_time_s,total_bytes,final_eval_loss,"
        "final_accuracy,host_time_s,steps_completed\n"
        "\"bandwidth=1Gbps,seed=0\",1Gbps,0,completed,0,0.3,600,0.9,0.75,1.5,2\n"
        "\"bandwidth=10Mbps,seed=0\",10Mbps,0,failed,1,,,,,,\n")
    runs = sweep_frame(str(tmp_path))
    assert list(runs.run) == ["bandwidth=1Gbps,seed=0", "bandwidth=10Mbps,seed=0"]
    assert runs["topology.link.bandwidth"].tolist() == ["1Gbps", "10Mbps"]
    assert runs.projected_time_s[0] == pytest.approx(0.3)
    assert np.isnan(runs.final_accuracy[1])
    steps = sweep_steps(str(tmp_path))
    assert list(steps.columns[:3]) == ["run", "step", "node"]
    assert len(steps) == 2 * 2 and set(steps.run) == {"bandwidth=1Gbps,seed=0"}
    with pytest.raises(LoadError):
        sweep_frame(str(tmp_path / "nowhere"))
