"""analysis.profile_layers on the CPU: its rows are the testbed's layer names, its times are
measured (finite, non-negative), and the testbed takes the file: a one-GPU projection's step is
the sum of the file's rows."""

import math
import os
import re
import subprocess

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from analysis import profile_layers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESNET18_ROWS = ["conv1", "bn1", "relu", "maxpool", "layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0",
                 "layer3.1", "layer4.0", "layer4.1", "avgpool", "fc", "*", "optimizer"]


def read(path):
    rows = {}
    with open(path) as f:
        lines = [l.strip() for l in f if l.strip()]
    assert lines[0].startswith("# model resnet18, batch 2, device cpu")
    assert lines[1] == "layer,forward_ms,backward_ms"
    for line in lines[2:]:
        name, forward, backward = line.split(",")
        rows[name] = (float(forward), float(backward))
    return rows


def test_resnet18_rows_are_the_testbeds_names_and_the_testbed_takes_them(tmp_path):
    out = tmp_path / "resnet18.csv"
    assert profile_layers.main(["--model", "resnet18", "--batch", "2", "--device", "cpu", "--steps", "1",
                                "--side", "64", "--out", str(out)]) == 0
    rows = read(out)
    assert list(rows) == RESNET18_ROWS
    for name, (forward, backward) in rows.items():
        assert math.isfinite(forward) and forward >= 0 and math.isfinite(backward) and backward >= 0, name
    assert rows["conv1"][0] > 0 and rows["layer4.1"][1] > 0 and rows["optimizer"][0] > 0
    assert rows["optimizer"][1] == 0
    binary = os.path.join(ROOT, "build", "testbed")
    if not os.path.exists(binary):
        pytest.skip("no build/testbed to read the profile")
    # One GPU, no network: two projected steps take twice the file's step (its rows summed).
    step_ms = sum(f + b for f, b in rows.values())
    result = subprocess.run(
        [binary, "run", os.path.join(ROOT, "scenarios/paper/base/one_gpu.yaml"),
         "--set", "workload={model: resnet18, dataset: imagenet_synthetic, batch_size: 2, steps: 2, train: false}",
         "--set", f"compute={{model: profile, file: {out}, device: a100}}", "-o", str(tmp_path / "p.h5")],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    projected = float(re.search(r"projected time\s+([0-9.]+) s", result.stdout).group(1))
    assert projected == pytest.approx(2 * step_ms / 1e3, abs=1e-3)


def test_row_names_of_the_other_models():
    _, units, side = profile_layers.build("vit_b_16", torch, torchvision)
    assert side == 224
    assert [n for n, _ in units] == ["conv_proj"] + [f"encoder.layers.{i}" for i in range(12)] + ["encoder.ln", "heads.head"]
    _, units, _ = profile_layers.build("densenet201", torch, torchvision)
    names = [n for n, _ in units]
    assert names[:5] == ["features.conv0", "features.norm0", "features.relu0", "features.pool0",
                         "features.denseblock1.denselayer1"]
    assert "features.transition3" in names and names[-2:] == ["features.norm5", "classifier"]
    assert len([n for n in names if ".denselayer" in n]) == 6 + 12 + 48 + 32
    _, units, context = profile_layers.build("gpt2_124m", torch, torchvision)
    assert context == 1024
    assert [n for n, _ in units] == ["wte", "wpe"] + [f"blocks.{i}" for i in range(12)] + ["ln_f"]
    _, units, sequence = profile_layers.build("bert_base", torch, torchvision, "pretraining")
    assert sequence == 128
    assert [n for n, _ in units] == ["embeddings"] + [f"layers.{i}" for i in range(12)] + ["pooler", "mlm", "next_sentence"]
