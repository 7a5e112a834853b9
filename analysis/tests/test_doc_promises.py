"""docs/results.md's promises about `make figures`: each figure it says a sweep draws is one the
sweep's swept keys let analysis.figures draw (a test that fails on the next drift)."""

import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _swept_keys(sweep_file):
    with open(sweep_file) as f:
        doc = yaml.safe_load(f)
    keys = set()
    for section in ("grid", "zip"):
        for key, values in (doc.get(section) or {}).items():
            if isinstance(values, list) and len(values) > 1:
                keys.add(key)
    return keys


def _promises():
    """(promised figure words, sweep file) for every paragraph saying what `make figures` draws."""
    with open(os.path.join(ROOT, "docs", "results.md")) as f:
        text = f.read()
    out = []
    for m in re.finditer(r"`make figures` draws(.*?)(?=\n\n|<!--)", text, re.S):
        after = text[m.end():]
        sweep = re.search(r"testbed sweep (scenarios/paper/\S+\.yaml)", after)
        if sweep:
            out.append((" ".join(m.group(1).split()), os.path.join(ROOT, sweep.group(1))))
    return out


def _bandwidth_keys(keys):
    return [k for k in keys if k.endswith(".bandwidth")]


def test_every_promised_figure_applies_to_its_sweep():
    promises = _promises()
    assert len(promises) >= 2, promises
    make = open(os.path.join(ROOT, "Makefile")).read()
    drawn = re.search(r"FIGURE_SWEEPS = (.*)", make).group(1).split()
    for words, sweep in promises:
        name = os.path.splitext(os.path.basename(sweep))[0]
        assert name in drawn, f"results.md says make figures draws {sweep}, but the Makefile does not sweep it"
        keys = _swept_keys(sweep)
        bandwidth = _bandwidth_keys(keys)
        if "time to a target" in words:
            grid = "topology.link.bandwidth" in keys and "topology.link.latency" in keys
            assert grid or len(bandwidth) == 1, f"{sweep}: figure 4 needs bandwidth x latency or one bandwidth ({keys})"
        if "time per iteration" in words:
            assert len(bandwidth) == 1, f"{sweep}: figure 9 needs exactly one swept bandwidth ({keys})"
        if "heatmap" in words:
            assert "topology.link.latency" in keys, f"{sweep}: a heatmap needs latency swept too ({keys})"
