"""Load one testbed run (.h5) or a sweep directory into plain records of numpy arrays."""

import csv
import math
import os
import re

import h5py
import numpy as np

try:
    import yaml
except ImportError:  # scripts/install-deps.sh installs python3-yaml; say so instead of a bare traceback
    yaml = None


class LoadError(Exception):
    """An input that cannot be read at all (no such file, not HDF5, bad manifest)."""


class MissingData(LoadError):
    """A run file lacks a dataset or attribute a figure needs; the message names both."""

    def __init__(self, path, what):
        self.path = path
        self.what = what
        super().__init__(f"{path}: missing {what}")


def parse_scenario(text, path="<scenario>"):
    """The resolved scenario YAML stored in the root attribute `scenario`, as nested dicts."""
    if yaml is None:
        raise LoadError("python3-yaml is needed to read the scenario attribute (apt-get install python3-yaml)")
    try:
        doc = yaml.safe_load(text) if text else {}
    except yaml.YAMLError as e:
        raise LoadError(f"{path}: attribute 'scenario' is not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise LoadError(f"{path}: attribute 'scenario' does not hold a mapping")
    return doc


# The scenario's units (docs/scenario.md, Units; sim/config/units.cpp): a quantity as written,
# "100Mbps", "10ms", "2.039TB/s", "82.6TFLOPS", becomes its base-unit number (bit/s, s, B/s,
# FLOP/s) so that figures can place runs on an axis.
_UNITS = {
    **{u: s for u, s in [("bps", 1), ("kbps", 1e3), ("Mbps", 1e6), ("Gbps", 1e9), ("Tbps", 1e12),
                         ("bit/s", 1), ("kbit/s", 1e3), ("Mbit/s", 1e6), ("Gbit/s", 1e9)]},
    **{u: s for u, s in [("B/s", 1), ("kB/s", 1e3), ("MB/s", 1e6), ("GB/s", 1e9), ("TB/s", 1e12)]},
    **{u: s for u, s in [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1), ("min", 60), ("h", 3600)]},
    **{p + f: s for p, s in [("", 1), ("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15)]
       for f in ("FLOPS", "FLOP/s")},
}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]+)\s*$")


def _same_unit(written, name):
    # Case does not matter, except B (byte) against b (bit).
    if len(written) != len(name):
        return False
    return all(a == b if "b" in (a, b) or "B" in (a, b) else a.lower() == b.lower() for a, b in zip(written, name))


def quantity(value):
    """A scenario quantity in base units (float), or the value unchanged when it is not one."""
    if not isinstance(value, str):
        return value
    m = _QUANTITY.match(value)
    if not m:
        return value
    for unit, scale in _UNITS.items():
        if _same_unit(m.group(2), unit):
            # Like the C++ reader: a power-of-ten unit shifts the exponent (5us is 5e-6 exactly).
            power = math.log10(scale)
            if abs(power - round(power)) < 1e-9:
                return float(f"{m.group(1)}e{round(power)}") if "e" not in m.group(1).lower() else float(m.group(1)) * scale
            return float(m.group(1)) * scale
    return value


def flatten(tree, prefix=""):
    """Nested dicts -> {dotted.key: leaf value}, the same spelling as `--set a.b.c=`; quantities
    in base units (100Mbps -> 1e8)."""
    out = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = quantity(value)
    return out


def _text(value):
    # h5py hands variable-length strings back as str, fixed-length ones as bytes.
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _plain(value):
    # numpy scalars in attributes -> Python numbers, so records print and compare simply.
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return _text(value)
    return value


class Run:
    """One result file: its scenario, status and summary up front; datasets read on demand.

    Datasets are read lazily (and cached) because /comm/messages can hold millions of rows
    and most figures never look at it.
    """

    def __init__(self, path):
        self.path = str(path)
        if not os.path.isfile(self.path):
            raise LoadError(f"{self.path}: no such file")
        try:
            with h5py.File(self.path, "r") as f:
                attrs = {k: _plain(v) for k, v in f.attrs.items()}
                self.summary = {k: _plain(v) for k, v in f["summary"].attrs.items()} if "summary" in f else {}
        except OSError as e:
            raise LoadError(f"{self.path}: not a readable HDF5 file ({e})") from None
        self.attrs = attrs
        if "scenario" not in attrs:
            raise MissingData(self.path, "root attribute 'scenario'")
        self.scenario = parse_scenario(_text(attrs["scenario"]), self.path)
        self.flat = flatten(self.scenario)
        self.status = _text(attrs.get("status", "unknown"))
        stem = os.path.splitext(os.path.basename(self.path))[0]
        self.name = str(self.scenario.get("name", stem))
        self.stem = stem
        algorithm = self.scenario.get("algorithm")
        self.algorithm = str(algorithm.get("name", "?")) if isinstance(algorithm, dict) else "?"
        self.params = {}  # swept dotted key -> value, filled by the sweep
        self.label = self.algorithm
        self._cache = {}

    def read(self, dataset):
        """The whole dataset as a numpy array, or MissingData naming this file and the dataset."""
        key = "/" + dataset.lstrip("/")
        if key not in self._cache:
            with h5py.File(self.path, "r") as f:
                node = f.get(key)
                if not isinstance(node, h5py.Dataset):
                    raise MissingData(self.path, key)
                self._cache[key] = node[()]
        return self._cache[key]

    def variants(self):
        """Names of the shifted test sets under /eval/variants (empty when there are none)."""
        with h5py.File(self.path, "r") as f:
            group = f.get("/eval/variants")
            return sorted(group.keys()) if isinstance(group, h5py.Group) else []

    def summary_value(self, key):
        if key not in self.summary:
            raise MissingData(self.path, f"/summary attribute '{key}'")
        return self.summary[key]

    def __repr__(self):
        return f"Run({self.path!r}, label={self.label!r}, status={self.status!r})"


def load_run(path):
    return Run(path)


class Sweep:
    """Runs to compare: a sweep directory, a folder of unrelated runs, or a single file.

    `swept` lists the dotted keys that differ between runs (from sweep.csv when there is
    one, otherwise found by comparing the resolved scenarios); labels are built from them.
    """

    def __init__(self, source, runs, swept, manifest=None):
        self.source = str(source)
        self.runs = runs
        self.swept = swept
        self.manifest = manifest or []
        _label(self)

    def names(self):
        """The scenario names, for captions: one name, or the distinct ones in run order."""
        seen = []
        for r in self.runs:
            if r.name not in seen:
                seen.append(r.name)
        return seen

    def __len__(self):
        return len(self.runs)


def _read_manifest(path):
    # sweep.csv: run, <one column per swept dotted key>, status, <summary numbers>.
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise LoadError(f"{path}: empty manifest") from None
        header = [h.strip() for h in header]
        rows = [{k: v.strip() for k, v in zip(header, row)} for row in reader if row]
    if not header or header[0] != "run":
        raise LoadError(f"{path}: first column must be 'run', found {header[:1]}")
    if "status" not in header:
        raise LoadError(f"{path}: no 'status' column (swept keys are the columns between 'run' and 'status')")
    swept = header[1 : header.index("status")]
    return swept, rows


def _manifest_file(directory, run):
    for candidate in (run, run + ".h5"):
        p = os.path.join(directory, candidate)
        if os.path.isfile(p):
            return p
    return None


# Keys that always differ between runs without being an experimental factor.
_NOT_FACTORS = ("name", "output.")


def _differing_keys(runs):
    if len(runs) < 2:
        return []
    keys = []
    for r in runs:
        for k in r.flat:
            if k not in keys and not any(k == p or (p.endswith(".") and k.startswith(p)) for p in _NOT_FACTORS):
                keys.append(k)
    missing = object()
    return [k for k in keys if len({repr(r.flat.get(k, missing)) for r in runs}) > 1]


def load_sweep(directory):
    """Every .h5 in `directory` (manifest order first when sweep.csv exists)."""
    directory = str(directory)
    if not os.path.isdir(directory):
        raise LoadError(f"{directory}: no such directory")
    manifest_path = os.path.join(directory, "sweep.csv")
    runs, swept, rows, seen = [], None, [], set()
    if os.path.isfile(manifest_path):
        swept, rows = _read_manifest(manifest_path)
        for row in rows:
            path = _manifest_file(directory, row["run"])
            if path is None:
                # A run that failed before writing leaves a manifest row and no file: nothing to plot.
                continue
            run = Run(path)
            for k in swept:
                # The resolved scenario's value, in base units (1e+08 for 100Mbps); prefer it.
                run.params[k] = run.flat.get(k, quantity(row.get(k)))
            runs.append(run)
            seen.add(os.path.abspath(path))
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if entry.endswith(".h5") and os.path.abspath(path) not in seen:
            runs.append(Run(path))
    if not runs:
        raise LoadError(f"{directory}: no .h5 result files")
    if swept is None:
        swept = _differing_keys(runs)
    elif len(runs) > 1:
        # A grid key given one value is an override for every run, not a factor: it tells no
        # runs apart, so it stays out of their labels.
        swept = [k for k in swept if len({repr(r.params.get(k)) for r in runs}) > 1]
    for run in runs:
        for k in swept:
            run.params.setdefault(k, run.flat.get(k))
    return Sweep(directory, runs, swept, rows)


def load(path):
    """A run file or a sweep directory, always as a Sweep (a single file is a sweep of one)."""
    path = str(path)
    if os.path.isdir(path):
        return load_sweep(path)
    return Sweep(path, [Run(path)], [])


def _label(sweep):
    # Lines are named by algorithm, then by the swept values that tell runs apart.
    from analysis.style import format_value, short_key

    for run in sweep.runs:
        parts = []
        if "algorithm.name" in sweep.swept or not sweep.swept:
            parts.append(run.algorithm)
        for k in sweep.swept:
            if k == "algorithm.name":
                continue
            v = run.params.get(k)
            if v is None:
                continue  # a key this run's algorithm does not take
            parts.append(f"{short_key(k)}={format_value(k, v)}")
        run.label = ", ".join(parts) if parts else run.stem
    # Unrelated runs of the same algorithm (no swept keys) would share a label: use file stems.
    labels = [r.label for r in sweep.runs]
    if len(set(labels)) < len(labels):
        for r in sweep.runs:
            if labels.count(r.label) > 1:
                r.label = f"{r.label} ({r.stem})"
