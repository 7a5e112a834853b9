#!/usr/bin/python3
"""Regenerates or checks every simulated number the docs quote.

A docs page holds each block of numbers between two markers:

    <!-- numbers: NAME -->
    ... text this script writes ...
    <!-- /numbers -->

and NAME is a function below (decorated with @block) that runs the testbed binary and returns the
block's Markdown. Simulated numbers (projected times, bytes, netbench times, accuracies of
deterministic runs) are a pure function of the binary, the scenario and the seed, so a block
that differs from what the binary produces now is stale, and --check fails on it.

    python3 scripts/doc_numbers.py --check --tier test     # what `make test` checks (ctest doc_numbers)
    python3 scripts/doc_numbers.py --check                 # every block (make docs-check)
    python3 scripts/doc_numbers.py --write [NAME ...]      # rewrite the blocks in place (make docs)

Host-time figures (seconds of CPU, overhead ratios) are not generated: they vary from run to
run, and the docs say where and when each was measured.
"""

import math
import argparse
import concurrent.futures
import dataclasses
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- numbers: (?P<name>[a-z0-9_]+) -->\n(?P<body>.*?)<!-- /numbers -->", re.S)


@dataclasses.dataclass
class Block:
    name: str
    tier: str  # "test": cheap enough for every `make test`; "full": make docs-check
    make: object


BLOCKS = {}


class Skip(Exception):
    """A block that cannot be made here (an input outside the repository is missing)."""


def block(tier):
    def register(fn):
        BLOCKS[fn.__name__] = Block(fn.__name__, tier, fn)
        return fn

    return register


class Testbed:
    """Runs the binary; every result lands in a scratch folder that is removed at the end."""

    def __init__(self, binary, scratch, jobs):
        self.binary = str(binary)
        self.scratch = Path(scratch)
        self.jobs = jobs
        self.count = 0
        self.environments = set()  # what produced the bits of this block's runs (numeric_environment)

    def _call(self, args):
        done = subprocess.run([self.binary, *args], cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"testbed {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done.stdout

    def run(self, scenario, *sets):
        """One `testbed run`; returns the /summary attributes (and the file path as 'path')."""
        self.count += 1
        out = self.scratch / f"run{self.count}.h5"
        args = ["run", scenario, "-q", "-o", str(out)]
        for s in sets:
            args += ["--set", s]
        self._call(args)
        with h5py.File(out, "r") as f:
            summary = {k: _scalar(v) for k, v in f["summary"].attrs.items()}
            summary["status"] = _scalar(f.attrs["status"])
            self.environments.add(numeric_environment(f))
        summary["path"] = out
        return summary

    def runs(self, calls):
        """Several runs at once: calls is a list of (scenario, [sets])."""
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(lambda c: self.run(c[0], *c[1]), calls))

    def netbench(self, scenario, collective, size, *sets):
        """`testbed netbench`; returns {'simulated': s, 'bound': s}."""
        args = ["netbench", scenario, "--collective", collective, "--size", size]
        for s in sets:
            args += ["--set", s]
        text = self._call(args)
        return {
            "simulated": float(re.search(r"^simulated\s+([0-9.]+) s", text, re.M).group(1)),
            "bound": float(re.search(r"^alpha-beta bound\s+([0-9.]+) s", text, re.M).group(1)),
        }

    def netbenches(self, calls):
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(lambda c: self.netbench(*c), calls))

    def netbench_grid(self, scenario, collective, size, sets, vary):
        """One `testbed netbench --vary ...` for every combination of `vary` [(key, [values])],
        the first key outermost; a list of {'simulated', 'bound'} in that order. One process
        for all: the binary spends ~1.3 s starting LibTorch."""
        args = ["netbench", scenario, "--collective", collective, "--size", size]
        for s in sets:
            args += ["--set", s]
        for key, values in vary:
            for v in values:
                args += ["--vary", f"{key}={v}"]
        text = self._call(args)
        return [{"simulated": float(re.search(r"^simulated\s+([0-9.]+) s", b, re.M).group(1)),
                 "bound": float(re.search(r"^alpha-beta bound\s+([0-9.]+) s", b, re.M).group(1))}
                for b in text.strip().split("\n\n")]

    def sweep(self, sweep_file):
        """Runs a sweep into the scratch folder; returns {run name: summary}."""
        spec = yaml.safe_load((ROOT / sweep_file).read_text())
        here = (ROOT / sweep_file).parent
        spec["base"] = str((here / spec["base"]).resolve())
        self.count += 1
        spec["out"] = str(self.scratch / f"sweep{self.count}")
        path = self.scratch / f"sweep{self.count}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        # Always -j 2, as the block's command says (each run gets cores / j threads; with portable
        # numerics that does not change the bits, docs/numerics.md, but the host times do).
        self._call(["sweep", str(path), "-j", "2"])
        out = {}
        for h5 in sorted(Path(spec["out"]).glob("*.h5")):
            with h5py.File(h5, "r") as f:
                summary = {k: _scalar(v) for k, v in f["summary"].attrs.items()}
                self.environments.add(numeric_environment(f))
            summary["path"] = h5
            out[h5.stem] = summary
        return out


def _scalar(v):
    if isinstance(v, bytes):
        return v.decode()
    try:
        return v.item()
    except AttributeError:
        return v


def numeric_environment(f):
    """One line naming what decides a run's bits besides the code: the kernels and threads in
    effect (the file's /numerics), and the versions of the libraries that hold them."""
    a = {k: _scalar(v) for k, v in f["numerics"].attrs.items()} if "numerics" in f else {}
    if not a:
        return "not recorded"
    blas = " ".join(a["openblas_config"].split()[:2]) or a["blas_library"]
    return (f"{a['numerics']} (portable: {a['portable']}), ATen {a['aten_cpu_capability']}, "
            f"{blas} {a['openblas_core']}, oneDNN {a['onednn']}, {a['threads']} threads, "
            f"LibTorch {a['libtorch_version']}")


ENVIRONMENT = re.compile(r"<!-- made under: (?P<env>.*?) -->\n")


def with_environment(body, environments):
    """The block's Markdown and, as a comment that does not render, what made its runs."""
    if not environments:
        return body
    return body + ("" if body.endswith("\n\n") else "\n") + f"<!-- made under: {' | '.join(sorted(environments))} -->\n"


def environment_note(old, new):
    """Why a stale block may differ: the numeric environment it was made under, if not this one."""
    documented, now = ENVIRONMENT.search(old), ENVIRONMENT.search(new)
    if not now:
        return ""
    if not documented:
        return "  (the documented block does not say what made it)\n"
    if documented["env"] != now["env"]:
        return (f"  ENVIRONMENT MISMATCH: the block was made under\n    {documented['env']}\n"
                f"  and this machine runs\n    {now['env']}\n")
    return "  (same numeric environment as documented: the code or the scenario changed)\n"


def mb(n):
    return f"{n / 1e6:.2f} MB"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def command(*lines):
    return "\n".join("    " + l for l in lines) + "\n\n"


# --- the blocks ----------------------------------------------------------------------------------

DEFAULT = "scenarios/100mbps_ring.yaml"


@block("test")
def default_run(tb):
    r = tb.run(DEFAULT)
    steps = 300
    return (
        command(f"build/testbed run {DEFAULT}")
        + f"Final test accuracy **{r['final_accuracy']:.4f}** on the whole test split, eval loss "
        f"{r['final_eval_loss']:.4f}, projected time **{r['projected_time_s']:.3f} s**, "
        f"{mb(r['total_bytes'])} sent ({r['total_bytes'] // steps} bytes a step: 2 (N-1) chunks of "
        f"d/N floats from each of the N = 4 nodes). {kept(r)}\n"
    )


COLLECTIVES = ["ring", "tree", "halving_doubling", "direct", "parameter_server"]


@block("test")
def collectives_10mb(tb):
    backends = ("network.backend", ["ns3", "flow", "analytical"])
    results = tb.netbench_grid(DEFAULT, "allreduce", "10MB", [], [("collective.algorithm", COLLECTIVES), backends])
    results += tb.netbench_grid(DEFAULT, "allreduce", "10MB",
                                ["collective.algorithm=hierarchical", "topology.kind=hierarchical"], [backends])
    rows = []
    for i, algorithm in enumerate(COLLECTIVES + ["hierarchical"]):
        ns3, flow, analytical = results[3 * i : 3 * i + 3]
        label = algorithm if algorithm != "hierarchical" else (
            "hierarchical (topology `hierarchical`, 2 x 2, 1 Gbps / 50 ms WAN)")
        rows.append([label, f"{ns3['bound']:.3f} s", f"{ns3['simulated']:.3f}", f"{flow['simulated']:.3f}",
                     f"{analytical['simulated']:.3f}"])
    return (
        command(f"build/testbed netbench {DEFAULT} --size 10MB --set collective.algorithm=ALGORITHM "
                "--set network.backend=BACKEND")
        + table(["algorithm", "bound", "ns3", "flow", "analytical"], rows)
    )



@block("full")
def backends_default(tb):
    ns3, flow, analytical = tb.runs([(DEFAULT, []), (DEFAULT, ["network.backend=flow"]),
                                     (DEFAULT, ["network.backend=analytical"])])
    rows = [[b, f"{r['projected_time_s']:.3f} s", f"{r['final_accuracy']:.4f}"]
            for b, r in (("ns3", ns3), ("flow", flow), ("analytical", analytical))]
    return (command(f"build/testbed run {DEFAULT} --set network.backend=BACKEND")
            + table(["backend", "projected time", "final accuracy"], rows))


def registered_algorithms():
    """The algorithms in the order training/algorithms/registry.cpp registers them."""
    text = (ROOT / "training/algorithms/registry.cpp").read_text()
    table = text[text.index("entries = {"):]
    return re.findall(r'^\s*\{"(\w+)",', table[:table.index("};")], re.M)


ALGORITHMS = registered_algorithms()


@block("full")
def algorithms(tb):
    results = tb.runs([(f"scenarios/algorithms/{a}.yaml", []) for a in ALGORITHMS])
    rows = []
    for a, r in zip(ALGORITHMS, results):
        spec = yaml.safe_load((ROOT / f"scenarios/algorithms/{a}.yaml").read_text())["algorithm"]
        keys = ", ".join(f"{k} {v}" for k, v in spec.items() if k != "name")
        label = a + (f" ({keys})" if keys else "")
        rows.append([label, f"{r['final_accuracy']:.4f}", mb(r["total_bytes"]), f"{r['projected_time_s']:.3f} s"])
    return (command("build/testbed run scenarios/algorithms/ALGORITHM.yaml")
            + table(["algorithm", "final accuracy", "bytes sent", "projected time"], rows))


@block("full")
def sparta_delay(tb):
    blocking, delayed = tb.runs([("scenarios/algorithms/sparta.yaml", []),
                                 ("scenarios/algorithms/sparta.yaml", ["algorithm.delay=1"])])
    return (command("build/testbed run scenarios/algorithms/sparta.yaml [--set algorithm.delay=1]")
            + f"SPARTA's blocking exchange projects {blocking['projected_time_s']:.3f} s; with `delay: 1` "
            f"{delayed['projected_time_s']:.3f} s (final accuracy {blocking['final_accuracy']:.4f} and "
            f"{delayed['final_accuracy']:.4f}).\n")


@block("full")
def slices(tb):
    runs = tb.runs([(DEFAULT, [f"collective.slices={k}"]) for k in (1, 2, 4, 8)])
    benches = tb.netbenches([(DEFAULT, "allreduce", "10MB", f"collective.slices={k}", f"network.backend={b}")
                             for k in (1, 2, 4, 8) for b in ("ns3", "flow")])
    rows = []
    for i, k in enumerate((1, 2, 4, 8)):
        ns3, flow = benches[2 * i], benches[2 * i + 1]
        rows.append([k, f"{runs[i]['projected_time_s']:.3f} s", f"{ns3['simulated']:.3f} s ({ns3['bound']:.3f} s)",
                     f"{flow['simulated']:.3f} s"])
    return (command(f"build/testbed run {DEFAULT} --set collective.slices=K",
                    f"build/testbed netbench {DEFAULT} --size 10MB --set collective.slices=K [--set network.backend=flow]")
            + table(["slices", "projected time (300 steps)", "10 MB ring all-reduce, ns3 (bound)", "flow"], rows))


P2P = ["--set", "nodes=2", "--set", "topology.kind=line"]
P2P_SETS = ("nodes=2", "topology.kind=line")


@block("test")
def p2p_10mb(tb):
    queues = ["1bdp", "1.5bdp", "3bdp"]
    r = tb.netbench_grid(DEFAULT, "p2p", "10MB", P2P_SETS, [("network.queue", queues)])
    r += tb.netbench_grid(DEFAULT, "p2p", "10MB", [*P2P_SETS, "network.queue_packets=1000"], [])
    rows = [[f"`queue: {q}`" + (" (default)" if q == "1.5bdp" else ""), f"{x['simulated']:.3f} s",
             f"{x['simulated'] / x['bound']:.3f}x"] for q, x in zip(queues, r)]
    rows.append(["`queue_packets: 1000` (the former default)", f"{r[3]['simulated']:.3f} s",
                 f"{r[3]['simulated'] / r[3]['bound']:.3f}x"])
    return (command(f"build/testbed netbench {DEFAULT} --collective p2p --size 10MB --set nodes=2 "
                    "--set topology.kind=line --set network.queue=Q")
            + f"10 MB over one 100 Mbps / 10 ms TCP link, MTU 9000, handshake included; alpha-beta "
            f"{r[0]['bound']:.3f} s. NewReno's slow start overshoots and drops packets at a small queue:\n\n"
            + table(["device queue", "time", "x alpha-beta"], rows))


@block("test")
def jitter(tb):
    r = tb.netbench_grid(DEFAULT, "p2p", "10MB", P2P_SETS,
                         [("topology.link.jitter", ["0ms", "1ms", "5ms", "10ms"]), ("seed", [0, 1, 2])])
    rows = []
    for i, j in enumerate(("0ms", "1ms", "5ms", "10ms")):
        times = [x["simulated"] for x in r[3 * i : 3 * i + 3]]
        rows.append([j, " / ".join(f"{t:.3f}" for t in times) + " s"])
    return (command(f"build/testbed netbench {DEFAULT} --collective p2p --size 10MB --set nodes=2 "
                    "--set topology.kind=line --set topology.link.jitter=J --set seed=S")
            + f"Alpha-beta bound {r[0]['bound']:.3f} s.\n\n"
            + table(["jitter", "seeds 0 / 1 / 2"], rows))


TCP_VARIANTS = ("newreno", "cubic", "bbr", "dctcp")


@block("full")
def tcp_variants(tb):
    clean = tb.netbenches([(DEFAULT, "p2p", "10MB", *P2P_SETS, f"network.tcp={v}") for v in TCP_VARIANTS])
    lossy = tb.netbenches([(DEFAULT, "p2p", "20MB", *P2P_SETS, f"network.tcp={v}", "topology.link.loss=0.5%")
                           for v in TCP_VARIANTS])
    rows = [[v, f"{c['simulated']:.3f} s ({c['simulated'] / c['bound']:.3f}x)", f"{l['simulated']:.2f} s"]
            for v, c, l in zip(TCP_VARIANTS, clean, lossy)]
    return (command(f"build/testbed netbench {DEFAULT} --collective p2p --size SIZE --set nodes=2 "
                    "--set topology.kind=line --set network.tcp=VARIANT [--set topology.link.loss=0.5%]")
            + table(["variant", "10 MB, lossless (x alpha-beta)", "20 MB, 0.5 % loss"], rows))


@block("full")
def mtu(tb):
    a, b = tb.runs([(DEFAULT, ["workload.steps=100"]), (DEFAULT, ["workload.steps=100", "network.mtu=1500"])])
    return (command(f"build/testbed run {DEFAULT} --set workload.steps=100 [--set network.mtu=1500]")
            + f"MTU 9000: projected {a['projected_time_s']:.3f} s, accuracy {a['final_accuracy']:.4f}; "
            f"MTU 1500: {b['projected_time_s']:.3f} s, accuracy {b['final_accuracy']:.4f}.\n")


@block("full")
def udp_gossip(tb):
    cases = [("tcp", "0"), ("udp", "0"), ("tcp", "5%"), ("udp", "5%")]
    runs = tb.runs([("scenarios/algorithms/gossip.yaml",
                     ["workload.steps=100", f"network.transport={t}", f"topology.link.loss={l}"]) for t, l in cases])
    rows = []
    for (t, l), r in zip(cases, runs):
        rows.append([t, l, f"{r['projected_time_s']:.3f} s", f"{r['lost_bytes'] / r['total_bytes']:.4f}",
                     f"{r['final_accuracy']:.4f}"])
    return (command("build/testbed run scenarios/algorithms/gossip.yaml --set workload.steps=100 "
                    "--set network.transport=T --set topology.link.loss=L")
            + table(["transport", "loss", "projected time", "lost bytes / bytes", "final accuracy"], rows))


@block("full")
def gpt_brown(tb):
    r = tb.run("scenarios/gpt_brown_ring.yaml")
    return (command("build/testbed run scenarios/gpt_brown_ring.yaml")
            + f"Perplexity **{r['final_perplexity']:.3f}** on the whole held-out split "
            f"({r['final_eval_samples']} windows), next-byte accuracy {r['final_accuracy']:.4f}, projected "
            f"{r['projected_time_s']:.3f} s, {r['total_bytes'] / 1e9:.2f} GB sent, {r['model_parameters']} parameters.\n")


@block("full")
def finetune(tb):
    checkpoint = tb.scratch / "pretrain_0_4.pt"
    pre = tb.run("scenarios/finetune/pretrain_0_4.yaml", f"output.checkpoint={checkpoint}")
    lora = tb.run("scenarios/finetune/finetune_5_9_lora_fa.yaml", f"workload.init_from={checkpoint}")
    scratch = tb.run("scenarios/finetune/pretrain_0_4.yaml", "workload.classes=[5, 6, 7, 8, 9]",
                     f"output.checkpoint={tb.scratch / 'scratch_5_9.pt'}")
    return (command("build/testbed run scenarios/finetune/pretrain_0_4.yaml",
                    "build/testbed run scenarios/finetune/finetune_5_9_lora_fa.yaml",
                    "build/testbed run scenarios/finetune/pretrain_0_4.yaml --set 'workload.classes=[5, 6, 7, 8, 9]'")
            + table(["run", "final accuracy", "bytes sent"],
                    [["DDP on classes 0-4 (pretraining)", f"{pre['final_accuracy']:.4f}", mb(pre["total_bytes"])],
                     ["LoRA-FA (rank 4) on 5-9 from that checkpoint", f"{lora['final_accuracy']:.4f}",
                      mb(lora["total_bytes"])],
                     ["DDP on 5-9 from scratch", f"{scratch['final_accuracy']:.4f}", mb(scratch["total_bytes"])]]))


@block("full")
def memo_bench(tb):
    a = tb.run("bench/scenarios/memo_ddp.yaml")
    b = tb.run("bench/scenarios/memo_ddp.yaml", "nodes=64", "workload.steps=100")
    c = tb.run("bench/scenarios/memo_ddp.yaml", "algorithm.overlap=true")
    e = tb.run("bench/scenarios/memo_ddp.yaml", "compute.step_time=1ms")
    d = tb.run(DEFAULT)
    def of(r):
        return f"{r['phases_replayed']} of {r['phases_replayed'] + r['phases_simulated']}"
    return (command("build/testbed run bench/scenarios/memo_ddp.yaml [--set nodes=64 --set workload.steps=100] "
                    "[--set algorithm.overlap=true] [--set compute.step_time=1ms]", f"build/testbed run {DEFAULT}")
            + f"8 nodes, 200 steps: {of(a)} steps replayed; 64 nodes, 100 steps: {of(b)}; 8 nodes with the "
            f"buckets leaving during backward (overlap): {of(c)}; 8 nodes with 1 ms steps, each step's first "
            f"send meeting the previous step's last ACKs on their way: {of(e)}. The default scenario keeps "
            f"{'no phases' if of(d) == '0 of 0' else of(d)}: its ring chunks differ by an element, so the ranks' "
            f"skew changes every step, and memoization's rule rules it out before step 0 (docs/network.md).\n")


@block("full")
def fleet_skew(tb):
    """Why the default scenario never replays: its ranks drift apart for thousands of steps."""
    steps = 6000
    r = tb.run(DEFAULT, "workload.train=false", f"workload.steps={steps}")
    with h5py.File(r["path"], "r") as f:
        t = f["train/time"][:]  # (step, rank): when each rank ended the step, s
    skew = t[:, 1] - t[:, 0]
    ns = lambda x: round(x * 1e9)
    assert all(ns(t[s, 2] - t[s, 0]) == 0 and ns(t[s, 3] - t[s, 1]) == 0 for s in range(steps)), \
        "ranks 0 and 2 (and 1 and 3) no longer end their steps together: rewrite this block's text"
    growth = ns(skew[100] - skew[99])
    level = next(s for s in range(steps) if ns(skew[s] - skew[-1]) == 0)
    assert level < steps - 100, "the skew has not levelled off: lengthen the run or rewrite this block's text"
    last = [ns(t[steps - 1, k] - t[steps - 2, k]) for k in range(4)]
    assert all(ns(skew[s] - skew[-1]) == 0 for s in range(level, steps)) and len(set(last)) == 1, \
        "the ranks' step times differ after the skew levels off: rewrite this block's text"
    def period(rank, s):
        return f"{(t[s, rank] - t[s - 1, rank]) * 1e3:.6f} ms"
    return (command(f"build/testbed run {DEFAULT} --set workload.train=false --set workload.steps={steps}")
            + f"Ranks 1 and 3 end step 1 {ns(skew[0]) / 1e3:.2f} µs after ranks 0 and 2, step 300 (the default "
            f"run's last) {ns(skew[299]) / 1e3:.2f} µs after them: each step ranks 0 and 2 take {period(0, 100)}, "
            f"ranks 1 and 3 {period(1, 100)}, {growth / 1e3:.2f} µs more. The skew stops growing at step "
            f"{level + 1}, at {ns(skew[-1]) / 1e6:.6f} ms, and from then on every rank takes {period(0, steps - 1)} "
            f"a step. {kept(r)}\n\n"
            + wide_fleet_skew(tb))


def kept(r):
    """What memoization did in a run of an uneven ring (docs/network.md#memoization)."""
    if r["phases_replayed"] + r["phases_simulated"] == 0:
        return "Memoization's rule ruled it out before step 0: the run kept no phases."
    return f"Steps replayed: {r['phases_replayed']} of {r['phases_replayed'] + r['phases_simulated']}."


def wide_fleet_skew(tb):
    """The issue's 64-node MLP: 126 sends a chain, ten of the 64 chunks one value longer."""
    steps, nodes, rate_bps = 40, 64, 100e6  # the default scenario's 100 Mb/s links
    r = tb.run(DEFAULT, f"nodes={nodes}", "workload.model=mlp", "workload.train=false", f"workload.steps={steps}")
    with h5py.File(r["path"], "r") as f:
        t = f["train/time"][:]
    assert t.shape == (steps, nodes)
    skews = [[round((t[s, k] - t[s, 0]) * 1e9) for k in range(nodes)] for s in range(steps)]
    unit = 2 * (nodes - 1) * 4 * 8 * 1e9 / rate_bps  # ns: 4 bytes more on each of a chain's 2(N-1) sends
    multiples = all(abs(x / unit - round(x / unit)) < 1e-6 for row in skews for x in row)
    assert multiples, "a rank's skew is not a whole number of chains' extra bytes: rewrite this block's text"
    spread = [(max(row) - min(row)) / 1e3 for row in skews]
    distinct = len({tuple(row) for row in skews})
    return (command(f"build/testbed run {DEFAULT} --set nodes={nodes} --set workload.model=mlp --set workload.train=false "
                    f"--set workload.steps={steps}")
            + f"64 MLP replicas (chunks of 14 696 and 14 700 bytes): every rank's end of every step lies "
            f"a whole multiple of {unit / 1e3:.2f} µs (4 bytes on each of a chain's {2 * (nodes - 1)} sends at "
            f"{rate_bps / 1e6:.0f} Mb/s) from rank 0's; the spread from first to last rank is "
            f"{spread[0]:.2f} µs after step 1 and {spread[-1]:.2f} µs after step {steps}, and {distinct} of the "
            f"{steps} steps have a pattern of skews of their own. {kept(r)}\n")


def gtest_lines(tb, binary, pattern, drop=()):
    """The lines a network test prints (not gtest's own), with host-time fields removed."""
    done = subprocess.run([str(Path(tb.binary).parent / "tests" / binary), f"--gtest_filter={pattern}"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} --gtest_filter={pattern} failed:\n{done.stdout[-3000:]}")
    out = []
    for line in done.stdout.splitlines():
        if line.startswith(("[", "Running main()")) or not line.strip() or "Note: Google Test filter" in line:
            continue
        for d in drop:
            line = re.sub(d, "", line)
        out.append(line.rstrip())
    return f"    build/tests/{binary} --gtest_filter='{pattern}'\n\n" + "\n".join("    " + l for l in out) + "\n"


@block("full")
def tcp_loss_tests(tb):
    return gtest_lines(tb, "network_tests", "TcpLoss*")


@block("full")
def link_tests(tb):
    return gtest_lines(tb, "network_tests", "Ns3Links*:Ns3Traffic*")


@block("full")
def flow_parking_lot(tb):
    return gtest_lines(tb, "network_tests", "FlowNetwork.RttSharingAgainstPacketLevelOnTheParkingLot")


@block("full")
def routing_halving_doubling(tb):
    cases = [("shortest", 0), ("ecmp", 0), ("ecmp", 1), ("ecmp", 5), ("ecmp", 17)]
    backends = ("flow", "analytical", "ns3")
    r = tb.netbenches([(DEFAULT, "allreduce", "10MB", "collective.algorithm=halving_doubling",
                        f"network.routing={routing}", f"seed={seed}", f"network.backend={b}")
                       for routing, seed in cases for b in backends])
    rows = []
    for i, (routing, seed) in enumerate(cases):
        label = f"`{routing}`" + (f", seed {seed}" if routing == "ecmp" else "")
        rows.append([label] + [f"{x['simulated']:.3f} s" for x in r[3 * i : 3 * i + 3]])
    return (command(f"build/testbed netbench {DEFAULT} --size 10MB --set collective.algorithm=halving_doubling "
                    "--set network.routing=R --set seed=S --set network.backend=B")
            + f"Alpha-beta bound {r[0]['bound']:.3f} s.\n\n" + table(["routing", *backends], rows))


@block("test")
def abilene(tb):
    graphml = ROOT / "scenarios" / yaml.safe_load((ROOT / "scenarios/abilene.yaml").read_text())["topology"]["file"]
    if not graphml.exists():
        raise Skip(f"{graphml} is not next to this checkout")
    text = tb._call(["topology", "scenarios/abilene.yaml"])
    pairs = text[text.index("host pairs"):]  # the links above are the file's, not simulated
    return "    build/testbed topology scenarios/abilene.yaml\n\n" + "\n".join(
        "    " + l for l in pairs.splitlines() if l.strip()) + "\n"


def sweep_table(tb, sweep_file, columns, label):
    """A paper sweep's runs as rows: label(row) then the named summary columns."""
    runs = tb.sweep(sweep_file)
    manifest = Path(next(iter(runs.values()))["path"]).parent / "sweep.csv"
    import csv
    rows = []
    with open(manifest) as f:
        for row in csv.DictReader(f):
            r = runs[row["run"]]
            rows.append([label(row)] + [fmt(r) for _, fmt in columns])
    return (command(f"build/testbed sweep {sweep_file} -j 2")
            + table(["run"] + [name for name, _ in columns], rows))


SUMMARY = [("projected time", lambda r: f"{r['projected_time_s']:.2f} s"),
           ("bytes", lambda r: mb(r["total_bytes"])),
           ("eval loss", lambda r: f"{r['final_eval_loss']:.4f}"),
           ("accuracy", lambda r: f"{r['final_accuracy']:.4f}")]


def run_label(row):
    return row["run"].replace(",", ", ")


@block("full")
def paper_lofi_vs_ddp(tb):
    return sweep_table(tb, "scenarios/paper/lofi_vs_ddp.yaml", SUMMARY, run_label)


@block("full")
def paper_topology(tb):
    return sweep_table(tb, "scenarios/paper/topology.yaml", SUMMARY[:2], run_label)


@block("full")
def paper_nodes(tb):
    return sweep_table(tb, "scenarios/paper/nodes.yaml", SUMMARY[:2], run_label)


@block("full")
def paper_sparta(tb):
    return sweep_table(tb, "scenarios/paper/sparta.yaml", SUMMARY, run_label)


@block("full")
def paper_diloco_h(tb):
    return sweep_table(tb, "scenarios/paper/diloco_h.yaml", SUMMARY, run_label)


SEVEN_B = "scenarios/paper/7b_diloco_100mbps.yaml"


@block("test")
def paper_7b_sync(tb):
    # Projections (workload.train false): seconds of host time each. A sync's time is the step
    # time less the step's compute, summed over the steps that sync.
    cases = [
        ("ddp (fp32 gradient every step, one all-reduce)", ["algorithm={name: ddp, overlap: false}", "workload.steps=2"], 1),
        ("diloco H 100 (bf16)", ["workload.steps=500"], 100),
        ("diloco H 500 (bf16)", ["workload.steps=500", "algorithm.H=500"], 500),
        ("sparta p 0.005 (fp32, every step)", ["algorithm={name: sparta, p: 0.005}", "workload.steps=20"], 1),
    ]
    rows = []
    for (label, sets, every), r in zip(cases, tb.runs([(SEVEN_B, c[1]) for c in cases])):
        with h5py.File(r["path"], "r") as f:
            times = f["/train/time"][:].max(axis=1)
            compute = f["/train/compute_time"][:].max(axis=1)
        steps = len(times)
        step_times = [times[0]] + [times[i] - times[i - 1] for i in range(1, steps)]
        syncs = [i for i in range(steps) if (i + 1) % every == 0]
        sync = sum(step_times[i] - compute[i] for i in syncs) / len(syncs)
        rows.append([label, steps, f"{r['projected_time_s']:.1f} s", f"{r['projected_time_s'] / steps:.2f} s",
                     f"{sync:.1f} s ({sync / 60:.1f} min)", f"{r['total_bytes'] / 64 / 1e9 / steps:.3f} GB"])
    return (command(f"build/testbed run {SEVEN_B} --set workload.steps=500 [--set algorithm.H=500]",
                    f"build/testbed run {SEVEN_B} --set 'algorithm={{name: ddp, overlap: false}}' --set workload.steps=2",
                    f"build/testbed run {SEVEN_B} --set 'algorithm={{name: sparta, p: 0.005}}' --set workload.steps=20")
            + table(["run", "steps", "projected time", "a step", "a sync (exposed)", "sent a node a step"], rows))


SEVEN_B_SITES = "scenarios/paper/7b_diloco_fsdp_sites.yaml"


def step_rows(path):
    """A run's step ends (the last node's), each step's compute (the longest) and GPU 0's bytes."""
    with h5py.File(path, "r") as f:
        return f["/train/time"][:].max(axis=1), f["/train/compute_time"][:].max(axis=1), f["/comm/bytes"][:][:, 0]


def inner_and_sync(path):
    """A few steps of an outer sync (H 3): the inner step, step 1 (step 0's forward gathers
    nothing under FSDP: the step before would have), and a sync's exposed time, syncing step 2
    less an inner one; neither depends on H."""
    times = step_rows(path)[0]
    inner = times[1] - times[0]
    return inner, (times[2] - times[1]) - inner


def save_png(fig, stem):
    """The figure as docs/figures/<stem>.png: the PNG is what the docs show; a PDF's timestamp
    changes every time."""
    from analysis import style
    for path in style.save(fig, str(ROOT / "docs" / "figures"), stem):
        if path.endswith(".pdf"):
            os.remove(path)


@block("test")
def paper_7b_fsdp_sites(tb):
    # Projections of a few steps each (a step takes about a second of host time at 512 GPUs):
    # the inner step is step 1 (step 0's forward gathers nothing: the step before would have); a
    # sync's exposed time is a syncing step less an inner one. Neither depends on H, so a run of
    # 500 steps is their sum, which the last column gives.
    diloco, ddp = tb.runs([(SEVEN_B_SITES, ["workload.steps=4", "algorithm.H=3"]),
                           (SEVEN_B_SITES, ["algorithm={name: ddp, overlap: false}", "workload.steps=3"])])

    _, compute, sent = step_rows(diloco["path"])
    inner, sync = inner_and_sync(diloco["path"])
    rows = [["diloco H 100, bf16 pseudo-gradient", f"{compute[1]:.3f} s", f"{inner:.3f} s",
             f"{sync:.1f} s ({sync / 60:.1f} min)", f"{sent[1] / 1e9:.2f} GB", f"{sent[2] / 1e9:.2f} GB",
             f"{(500 * inner + 5 * sync) / 3600:.2f} h"]]
    times, compute, sent = step_rows(ddp["path"])
    step = times[1] - times[0]
    rows.append(["ddp across sites (fp32 gradient every step, one all-reduce)", f"{compute[1]:.3f} s", "-",
                 f"{step - inner:.1f} s ({(step - inner) / 60:.1f} min)", "-", f"{sent[1] / 1e9:.2f} GB",
                 f"{500 * step / 3600:.2f} h"])
    return (command(f"build/testbed run {SEVEN_B_SITES} --set workload.steps=4 --set algorithm.H=3",
                    f"build/testbed run {SEVEN_B_SITES} --set 'algorithm={{name: ddp, overlap: false}}' --set workload.steps=3")
            + table(["run", "a step's compute", "an inner step", "a sync (exposed)", "sent a GPU an inner step",
                     "sent a GPU a syncing step", "500 steps"], rows))


GPT2_HOSTS = "scenarios/paper/gpt2_hosts_diloco.yaml"


@block("test")
def paper_gpt2_hosts(tb):
    # DDP over all 32 GPUs (its steady step: step 1) against DDP inside each host of 8 and DiLoCo
    # across the 4 (inner step: step 1; a sync's exposed time: a syncing step less an inner one;
    # neither depends on H, so H = 100's mean step is inner + sync / 100).
    bandwidths = ["10Gbps", "100Gbps"]
    calls = []
    for bw in bandwidths:
        calls += [(GPT2_HOSTS, ["workload.steps=3", f"topology.link.bandwidth={bw}"]),
                  (GPT2_HOSTS, ["workload.steps=4", f"topology.link.bandwidth={bw}", "replica_group.gpus=8",
                                "algorithm={name: diloco, H: 3}"])]
    results = tb.runs(calls)
    rows = []
    for i, bw in enumerate(bandwidths):
        t, compute, _ = step_rows(results[2 * i]["path"])
        compute, ddp = compute[1], t[1] - t[0]
        inner, sync = inner_and_sync(results[2 * i + 1]["path"])
        inner_compute = step_rows(results[2 * i + 1]["path"])[1][1]  # its own: the slowdown differs
        mean = inner + sync / 100
        rows.append([bw, "ddp over all 32 GPUs", f"{1000 * compute:.1f} ms", f"{1000 * ddp:.1f} ms", "", "", ""])
        rows.append([bw, "ddp inside each host, diloco H 100 across the 4", f"{1000 * inner_compute:.1f} ms",
                     f"{1000 * mean:.1f} ms",
                     f"{1000 * inner:.1f} ms", f"{1000 * sync:.1f} ms", f"{ddp / mean:.1f}x"])
    return (command(f"build/testbed run {GPT2_HOSTS} --set topology.link.bandwidth=10Gbps --set workload.steps=3",
                    f"build/testbed run {GPT2_HOSTS} --set topology.link.bandwidth=10Gbps --set workload.steps=4 "
                    "--set replica_group.gpus=8 --set 'algorithm={name: diloco, H: 3}'")
            + table(["NIC", "run", "a step's compute", "a step (mean)", "an inner step", "a sync (exposed)",
                     "faster than ddp over 32"], rows))


FSDP_TIMELINE_SETS = ["nodes=8", "replica_group={gpus: 8, parallelism: fsdp}", "topology.interconnect=pcie4",
                      "workload.steps=3", "algorithm={name: ddp}"]


@block("full")
def fsdp_timeline(tb):
    """One FSDP step of GPT-2 124M on a host of 8 A100s on PCIe 4 (its blocks the units), as a
    timeline of GPU 0's collectives: docs/figures/fsdp_step_timeline.png (analysis.figures,
    figure 12), and the step's times."""
    r = tb.run(GPT2_HOSTS, *FSDP_TIMELINE_SETS)
    sys.path.insert(0, str(ROOT))
    from analysis import figures
    from analysis.load import load
    sweep = load(str(r["path"]))
    sweep.source = GPT2_HOSTS + " with " + ", ".join(FSDP_TIMELINE_SETS)
    run = sweep.runs[0]
    save_png(figures.fig_step_timeline(sweep, run, 0, 1), "fsdp_step_timeline")
    compute, spans = figures.step_timeline(run, 0, 1)
    with h5py.File(r["path"], "r") as f:
        t = f["/train/time"][:, 0]
    kinds = {}
    for kind, a, b in spans:
        family = kind.rsplit(".", 1)[0]
        kinds.setdefault(family, []).append(b - a)
    rows = [["the step", f"{1000 * (t[1] - t[0]):.1f} ms"], ["its compute", f"{1000 * compute:.1f} ms"]]
    for family, durations in kinds.items():
        rows.append([f"{family} ({len(durations)})", f"{1000 * sum(durations):.1f} ms in all"])
    sets = " ".join(f"--set '{s}'" for s in FSDP_TIMELINE_SETS)
    return command(f"build/testbed run {GPT2_HOSTS} {sets}") + table(["GPU 0, step 1", "time"], rows)


INTELLECT1 = "scenarios/paper/intellect1.yaml"


@block("test")
def paper_intellect1(tb):
    # Per site bandwidth: the inner step is step 1 (a micro-batch of 8192 tokens a GPU), an
    # optimizer step 16 of them; a sync's exposed time is a syncing step less an inner one, H = 100
    # optimizer steps between syncs. Compute utilisation: the share of wall-clock time spent in
    # inner steps; MFU: 6 N tokens a GPU over the time at the H100's bf16 peak (989.4 TFLOP/s),
    # syncs included, as the paper counts it.
    bandwidths = ["500Mbps", "1Gbps", "10Gbps"]
    results = tb.runs([(INTELLECT1, ["workload.steps=4", "algorithm.H=3", f"topology.link.bandwidth={bw}"])
                       for bw in bandwidths])
    parameters, peak, tokens = 10211381248, 989.4e12, 16 * 8192
    rows = []
    for bw, r in zip(bandwidths, results):
        sent = step_rows(r["path"])[2]
        inner, sync = inner_and_sync(r["path"])
        optimizer_step = 16 * inner
        round_time = 100 * optimizer_step + sync
        utilisation = 100 * (100 * optimizer_step) / round_time
        mfu = 6 * parameters * tokens * 100 / round_time / peak
        rows.append([bw, f"{inner:.2f} s", f"{optimizer_step:.1f} s", f"{100 * optimizer_step / 60:.1f} min",
                     f"{sync:.0f} s ({sync / 60:.1f} min)", f"{(sent[2] - sent[1]) / 1e9:.2f} GB", f"{utilisation:.1f} %",
                     f"{100 * mfu:.1f} %"])
    return (command(f"build/testbed run {INTELLECT1} --set workload.steps=4 --set algorithm.H=3 "
                    "--set topology.link.bandwidth=1Gbps")
            + table(["site NIC", "a micro-batch", "an optimizer step (16)", "100 of them", "a sync (exposed)",
                     "sent a GPU a sync", "compute utilisation", "MFU"], rows))


DEAR = "scenarios/paper/dear_resnet50.yaml"
ACPSGD = "scenarios/paper/acpsgd_resnet50.yaml"


# The papers' BERT-base settings on the same clusters: sequence 64, the per-GPU batch each paper
# used (our BERT has a classification head, not the pre-training heads; results.md says so).
def bert_base(batch):
    return [f"workload={{model: bert, dataset: brown_genres, bert: {{preset: base, sequence: 64}}, "
            f"batch_size: {batch}, steps: 10, train: false}}"]


def step_durations(path):
    """Each step's duration in a run: the last node's end of it minus that of the step before."""
    with h5py.File(path, "r") as f:
        time, step = f["train"]["time"][:], f["train"]["step"][:]
    ends = [float(time[step == s].max()) for s in sorted(set(step.tolist()))]
    return [b - a for a, b in zip([0.0] + ends[:-1], ends)]


def algorithm_grid(tb, scenario, models, bandwidths, compare, steady=False):
    """For each (model, its --set overrides, its (label, algorithm section) list) at each NIC
    bandwidth of `scenario`: a row per run with its step time and compare(step times of that
    model and bandwidth, i) beside it. The step time is the run's mean; with `steady`, the mean
    of the steps between its first and its last (which differ where an algorithm's
    communication spans two steps)."""
    calls, groups = [], []
    for model, sets, algorithms in models:
        for bw in bandwidths:
            groups.append((model, bw, algorithms))
            # An entry is (label, algorithm section) or (label, algorithm section, more --set overrides).
            calls += [(scenario, sets + [f"algorithm={a[1]}", f"topology.link.bandwidth={bw}"] + (a[2] if len(a) > 2 else []))
                      for a in algorithms]
    results = tb.runs(calls)
    rows, at = [], 0
    for model, bw, algorithms in groups:
        n = len(algorithms)
        if steady:
            step = [sum(d[1:-1]) / len(d[1:-1]) for d in (step_durations(r["path"]) for r in results[at:at + n])]
        else:
            step = [r["projected_time_s"] / r["steps_completed"] for r in results[at:at + n]]
        at += n
        for j, a in enumerate(algorithms):
            rows.append([model, bw, a[0], f"{1000 * step[j]:.1f} ms", compare(step, j)])
    return rows


@block("full")
def paper_dear(tb):
    """DeAR against the baselines of its paper as its repository runs them (lzhangbv/dear_pytorch,
    docs/results.md): WFBP a tensor at a time on NCCL, Horovod 0.21.3's defaults (128 MB fusion,
    1 ms cycle), PyTorch DDP's 25 MB buckets, MG-WFBP (DeAR's copy: its merge rule, tensors under
    8192 elements merged), and one blocking all-reduce."""
    algorithms = [("dear", "{name: dear}"),
                  ("wfbp (a tensor at a time, nccl)", "{name: ddp, per_tensor: true}"),
                  ("horovod (128 MB fusion, 1 ms cycle)", "{name: ddp, per_tensor: true}",
                   ["collective={library: horovod, fusion_mb: 128, cycle_time: 1ms}"]),
                  ("ddp, overlapped (25 MB buckets)", "{name: ddp}"),
                  ("mg-wfbp", "{name: ddp, mgwfbp: true, merge_below: 8192}"),
                  ("ddp, one blocking all-reduce", "{name: ddp, overlap: false}")]
    # DeAR (row 0) against the fastest baseline, and against each one on its row.
    speedup = lambda step, j: (f"{100 * (min(step[1:]) / step[0] - 1):+.1f} % (over the fastest)" if j == 0
                               else f"{100 * (step[j] / step[0] - 1):+.1f} %")
    models = [("ResNet-50", [], algorithms), ("BERT-base", bert_base(64), algorithms)]
    rows = algorithm_grid(tb, DEAR, models, ["10Gbps", "100Gbps"], speedup, steady=True)
    # DeAR's first step has no all-gathers of a step before to wait for; its last waits for its
    # own, which every other step overlaps with the next forward.
    d = step_durations(tb.runs([(DEAR, ["algorithm={name: dear}", "topology.link.bandwidth=10Gbps"])])[0]["path"])
    low, high = f"{1000 * min(d[1:-1]):.1f}", f"{1000 * max(d[1:-1]):.1f}"
    between = f"each {low} ms" if low == high else f"{low} to {high} ms"
    note = (f"\nDeAR, ResNet-50 at 10Gbps, step by step: the first {1000 * d[0]:.1f} ms, the {len(d) - 2} between "
            f"{between}, the last {1000 * d[-1]:.1f} ms.\n")
    return (command(f"build/testbed run {DEAR} --set 'algorithm={{name: ddp}}' --set topology.link.bandwidth=100Gbps",
                    f"build/testbed run {DEAR} --set '{bert_base(64)[0]}'")
            + table(["model", "NIC", "run", "a step (between the first and the last)",
                     "DeAR's speed-up over it"], rows) + note)


@block("test")
def library_ablation(tb):
    """What the collective library adds, scenario by scenario: each projection with `library:
    none` (the network alone), with the default library but no overlap slowdown, and as it
    ships (the library and its slowdown). A step is the mean of the steps between the first and
    the last (DeAR's first has no gathers to wait for, its last waits for its own)."""
    cases = [
        ("default ring, ddp (4 GPUs, 100 Mb/s)", DEFAULT, ["workload.train=false", "workload.steps=6"]),
        ("default ring on the cpu preset (gloo)", DEFAULT,
         ["workload.train=false", "workload.steps=6", "compute={model: flops, device: cpu}"]),
        ("DeAR's cluster, ResNet-50, ddp (25 MB buckets)", DEAR, ["workload.steps=5", "algorithm={name: ddp}"]),
        ("DeAR's cluster, ResNet-50, ddp a tensor at a time", DEAR,
         ["workload.steps=5", "algorithm={name: ddp, per_tensor: true}"]),
        ("DeAR's cluster, ResNet-50, one blocking all-reduce", DEAR,
         ["workload.steps=5", "algorithm={name: ddp, overlap: false}"]),
        ("DeAR's cluster, ResNet-50, dear", DEAR, ["workload.steps=5", "algorithm={name: dear}"]),
        ("DeAR's cluster at 100 Gb/s (ib), ResNet-50, ddp", DEAR,
         ["workload.steps=5", "algorithm={name: ddp}", "topology.link.bandwidth=100Gbps"]),
        ("GPT-2 124M, 4 hosts of 8 A100, 100 Gb/s (ib), ddp", GPT2_HOSTS,
         ["workload.steps=4", "algorithm={name: ddp}", "topology.link.bandwidth=100Gbps"]),
        ("INTELLECT-1, 14 sites of 8 H100, an inner step", INTELLECT1, ["workload.steps=4", "algorithm.H=100"]),
    ]
    variants = [["collective.library=none"], ["compute.overlap_slowdown=0"], []]
    results = tb.runs([(scenario, sets + v) for _, scenario, sets in cases for v in variants])
    rows = []
    for i, (label, _, _) in enumerate(cases):
        steps = []
        for r in results[3 * i:3 * i + 3]:
            d = step_durations(r["path"])
            steps.append(sum(d[1:-1]) / len(d[1:-1]))
        rows.append([label] + [f"{1000 * t:.1f} ms" for t in steps] + [f"{steps[2] / steps[0]:.2f}x"])
    return (command(f"build/testbed run {DEAR} --set workload.steps=5 --set 'algorithm={{name: ddp}}' "
                    "--set collective.library=none")
            + table(["projection", "library none", "library, no slowdown", "as shipped", "shipped / none"], rows))


@block("full")
def paper_acpsgd(tb):
    def algorithms(rank):
        return [(f"acpsgd, rank {rank}", f"{{name: acpsgd, rank: {rank}}}"), ("s-sgd (overlapped ddp)", "{name: ddp}"),
                (f"powersgd, rank {rank}", f"{{name: powersgd, rank: {rank}}}")]
    models = [("ResNet-50", [], algorithms(4)), ("BERT-base", bert_base(32), algorithms(32))]
    rows = algorithm_grid(tb, ACPSGD, models, ["1Gbps", "10Gbps"], lambda step, j: f"{step[j] / step[0]:.2f}x")
    return (command(f"build/testbed run {ACPSGD} --set 'algorithm={{name: powersgd, rank: 4}}' --set topology.link.bandwidth=1Gbps",
                    f"build/testbed run {ACPSGD} --set '{bert_base(32)[0]}' --set 'algorithm={{name: acpsgd, rank: 32}}'")
            + table(["model", "NIC", "run", "a step", "ACP-SGD's speed-up over it"], rows))


@block("full")
def paper_dp_kfac(tb):
    """D-KFAC against DP-KFAC on DeAR's 64 GPUs (16 hosts of 4 RTX 2080 Ti, 10 Gb/s), ResNet-50
    on ImageNet shapes, batch 64 a GPU: what a second-order update sends and computes a node a
    step beyond plain SGD under DDP."""
    runs = [("SGD", "{name: sgd, momentum: 0.9}"),
            ("D-KFAC, inverse (directions broadcast)", "{name: kfac, momentum: 0.9}"),
            ("D-KFAC, eigen (eigenvectors broadcast)", "{name: kfac, variant: eigen, momentum: 0.9}"),
            ("DP-KFAC", "{name: dp_kfac, momentum: 0.9}"),
            ("DP-KFAC, eigen (eigen_dp, the reference's default)", "{name: dp_kfac, variant: eigen, momentum: 0.9}")]
    results = tb.runs([(DEAR, ["algorithm={name: ddp}", f"optimizer={o}", "workload.steps=2"]) for _, o in runs])
    measured = []
    for r in results:
        with h5py.File(r["path"], "r") as f:
            nodes_steps = f["train"]["compute_time"].size
            compute = f["train"]["compute_time"][:]
            measured.append({"bytes": r["total_bytes"] / nodes_steps, "compute": float(compute.mean()),
                             "slowest": float(compute.mean(axis=0).max()), "step": r["projected_time_s"] / r["steps_completed"]})
    base = measured[0]
    rows = []
    for (label, _), m in zip(runs, measured):
        extra_bytes, extra_compute = m["bytes"] - base["bytes"], m["compute"] - base["compute"]
        rows.append([label, f"{1000 * m['step']:.0f} ms", mb(m["bytes"]), mb(extra_bytes), f"{1000 * extra_compute:.1f} ms",
                     f"{1000 * (m['slowest'] - base['slowest']):.1f} ms"])
    dp = measured[3]
    ratio = lambda m: (f"{(m['bytes'] - base['bytes']) / (dp['bytes'] - base['bytes']):.2f}x",
                       f"{(m['compute'] - base['compute']) / (dp['compute'] - base['compute']):.2f}x",
                       f"{(m['slowest'] - base['slowest']) / (dp['slowest'] - base['slowest']):.2f}x")
    ratios = [[label, *ratio(m)] for (label, _), m in zip(runs[1:3], measured[1:3])]
    return (command(f"build/testbed run {DEAR} --set 'algorithm={{name: ddp}}' --set 'optimizer={{name: dp_kfac, momentum: 0.9}}' --set workload.steps=2")
            + table(["optimizer", "a step", "sent a node a step", "beyond SGD's", "compute beyond SGD's (mean node)",
                     "(slowest node)"], rows) + "\n"
            + table(["against DP-KFAC", "communication", "computation (mean node)", "(slowest node)"], ratios))


def steady_step(path):
    """A run's step: the mean of its steps between the first and the last (DeAR's first has no
    gathers to wait for, its last waits for its own)."""
    d = step_durations(path)
    return sum(d[1:-1]) / len(d[1:-1])


def off_by(ours, paper):
    """|ours / paper - 1|, where either may be a (low, high) range: 0 where they overlap, else
    from the nearest ends."""
    lo, hi = paper if isinstance(paper, tuple) else (paper, paper)
    olo, ohi = ours if isinstance(ours, tuple) else (ours, ours)
    if ohi < lo:
        return 1 - ohi / lo
    if olo > hi:
        return olo / hi - 1
    return 0.0


def figure(v, fmt):
    return f"{fmt.format(v[0])}-{fmt.format(v[1])}" if isinstance(v, tuple) else fmt.format(v)


@block("full")
def seed_papers(tb):
    """The seed papers' headline quantities against ours, each projected here on the paper's
    cluster; every row off by more than 0.25 carries its ablations (the collective library
    `none`, the overlap slowdown off, and the variants named), each measured, and reads
    "explained" only where an ablation that brings it within 0.25 is a documented property of
    the paper's setup (the source named), else "not reproduced"."""
    rows = []
    done = {}

    def run_once(calls):
        """tb.runs with each distinct run done once: the ablations share runs (DeAR itself beside
        each baseline alone, the same D-KFAC run against each DP-KFAC variant)."""
        keys = [(scenario, tuple(sets)) for scenario, sets in calls]
        missing = [k for k in dict.fromkeys(keys) if k not in done]
        for k, r in zip(missing, tb.runs([(scenario, list(sets)) for scenario, sets in missing])):
            done[k] = r
        return [done[k] for k in keys]

    def add(paper, quantity, paper_value, measure, fmt, ablations, note=""):
        """A row; an ablation is (label, --set overrides for `measure` or a function that measures
        it, the documented property of the paper's setup it stands for or None)."""
        ours = measure([])
        off = off_by(ours, paper_value)
        status, tried = "within 25 %", []
        if off > 0.25:
            status = "not reproduced"
            for label, sets, source in [("library none", ["collective.library=none"], None),
                                        ("no overlap slowdown", ["compute.overlap_slowdown=0"], None)] + ablations:
                value = sets() if callable(sets) else measure(sets)
                tried.append(f"{label}: {figure(value, fmt)} ({off_by(value, paper_value):.2f})")
                if source and off_by(value, paper_value) <= 0.25 and status == "not reproduced":
                    status = f"explained: {label} ({source})"
        rows.append([paper, quantity, figure(paper_value, fmt), figure(ours, fmt), f"{off:.2f}",
                     "; ".join(tried) or "—", status + (f"; {note}" if note else "")])

    # DeAR: its speed-up over the fastest of its baselines as its repository runs them, the most
    # over ResNet-50 and BERT-base (the paper's "up to").
    dear_baselines = [("wfbp", "{name: ddp, per_tensor: true}", []),
                      ("horovod", "{name: ddp, per_tensor: true}", ["collective={library: horovod, fusion_mb: 128, cycle_time: 1ms}"]),
                      ("ddp", "{name: ddp}", []),
                      ("mg-wfbp", "{name: ddp, mgwfbp: true, merge_below: 8192}", [])]

    def dear(bandwidth, only=None):
        def measure(sets):
            best = 0.0
            for model in ([], bert_base(64)):
                calls = [(DEAR, model + ["workload.steps=5", f"topology.link.bandwidth={bandwidth}", f"algorithm={a}"] + more + sets)
                         for a, more in [("{name: dear}", [])] + [(b[1], b[2]) for b in dear_baselines if only in (None, b[0])]]
                steps = [steady_step(r["path"]) for r in run_once(calls)]
                best = max(best, min(steps[1:]) / steps[0])
            return best
        return measure

    for bandwidth, label, paper_value in (("10Gbps", "10 GbE", 1.83), ("100Gbps", "100 Gb/s IB", 1.15)):
        over_one = [(f"over {b[0]} alone", lambda bw=bandwidth, name=b[0]: dear(bw, name)([]), None) for b in dear_baselines]
        add("DeAR (arXiv 2302.12445)" if bandwidth == "10Gbps" else "DeAR",
            f"speed-up over the fastest baseline, {label}, up to", paper_value, dear(bandwidth), "{:.2f}x", over_one,
            note="ByteScheduler is not modelled")

    # ACP-SGD against S-SGD (overlapped DDP) and PowerSGD, the mean over ResNet-50 (rank 4) and
    # BERT-base (rank 32) at 1 and 10 Gb/s.
    def acp(against, bandwidths=("1Gbps", "10Gbps")):
        def measure(sets):
            ratios = []
            for model, rank in (([], 4), (bert_base(32), 32)):
                for bw in bandwidths:
                    calls = [(ACPSGD, model + [f"algorithm={a}", f"topology.link.bandwidth={bw}"] + sets)
                             for a in (f"{{name: acpsgd, rank: {rank}}}", against.format(rank=rank))]
                    t = [r["projected_time_s"] / r["steps_completed"] for r in run_once(calls)]
                    ratios.append(t[1] / t[0])
            return sum(ratios) / len(ratios)
        return measure

    for label, against, paper_value in (("S-SGD", "{{name: ddp}}", 4.06), ("PowerSGD", "{{name: powersgd, rank: {rank}}}", 1.43)):
        with_ib = ("100 Gb/s InfiniBand in the mean", lambda a=against: acp(a, ("1Gbps", "10Gbps", "100Gbps"))([]),
                   "the paper's mean takes in 1 GbE, 10 GbE and 100 Gb/s InfiniBand")
        add("ACP-SGD", f"speed-up over {label}, the mean", paper_value, acp(against), "{:.2f}x", [with_ib])

    # DP-KFAC against D-KFAC on 64 GPUs, ResNet-50: bytes a node sends and compute (the slowest
    # node's) beyond SGD's, a step.
    def dp_kfac(quantity, kfac="{name: kfac, momentum: 0.9}", dp="{name: dp_kfac, momentum: 0.9}"):
        def measure(sets):
            runs = ["{name: sgd, momentum: 0.9}", kfac, dp]
            measured = []
            for r in run_once([(DEAR, ["algorithm={name: ddp}", f"optimizer={o}", "workload.steps=2"] + sets) for o in runs]):
                with h5py.File(r["path"], "r") as f:
                    compute = f["train"]["compute_time"][:]
                    measured.append((r["total_bytes"] / compute.size, float(compute.mean(axis=0).max())))
            i = 0 if quantity == "communication" else 1
            return (measured[1][i] - measured[0][i]) / (measured[2][i] - measured[0][i])
        return measure

    script = ("batch 32, 100 Gb/s IB", ["workload.batch_size=32", "topology.link.bandwidth=100Gbps"],
              "the reference's efficiency runs: batch.sh, ResNet-50 at 32 a GPU; train_imagenet.sh, rdma=1")
    for quantity, paper_value in (("communication", (2.79, 3.15)), ("computation", (1.55, 1.65))):
        eigen = ("D-KFAC eigen", lambda q=quantity: dp_kfac(q, "{name: kfac, variant: eigen, momentum: 0.9}")([]), None)
        eigen_dp = ("DP-KFAC eigen_dp", lambda q=quantity: dp_kfac(q, dp="{name: dp_kfac, variant: eigen, momentum: 0.9}")([]),
                    "the reference's default DP variant: dp_kfac.py, train_imagenet.sh")
        add("DP-KFAC (arXiv 2206.15143)" if quantity == "communication" else "DP-KFAC",
            f"less {quantity} than D-KFAC, a step" + (" (slowest node)" if quantity == "computation" else ""),
            paper_value, dp_kfac(quantity), "{:.2f}x", [script, eigen, eigen_dp])

    # Eva against SGD: time to target as the paper's own epoch counts (SGD 100, Eva 55 on
    # ImageNet, the same batch) times the step projected on its 32 GPUs (8 hosts of 4, 10 GbE).
    def eva(sets):
        calls = [(DEAR, ["nodes=32", "workload.batch_size=96", "compute.memory_check=warn", "workload.steps=5",
                         "algorithm={name: ddp}", f"optimizer={o}"] + sets)
                 for o in ("{name: sgd, momentum: 0.9}", "{name: eva, momentum: 0.9, damping: 0.001}")]
        t = [steady_step(r["path"]) for r in run_once(calls)]
        return 100 * t[0] / (55 * t[1])

    horovod = ("horovod, a tensor at a time", ["algorithm={name: ddp, per_tensor: true}", "collective.library=horovod"],
               "Eva's reference launches with Horovod (launch_horovod.sh)")
    add("Eva (ICLR 2023)", "time to target against SGD (the paper's epochs, ImageNet: 100 / 55), up to", 2.05, eva, "{:.2f}x",
        [horovod], note="batch 96 does not fit an RTX 2080 Ti's 11 GiB in fp32 here; projected with the memory check a warning")

    # INTELLECT-1: MFU (6 N tokens over the round at the H100's bf16 peak) at 500 Mb/s to 10 Gb/s,
    # and compute utilisation (the share of wall-clock time in inner steps).
    parameters, peak, tokens = 10211381248, 989.4e12, 16 * 8192

    def intellect(quantity, bandwidths=("500Mbps", "1Gbps", "10Gbps")):
        def measure(sets):
            values = []
            for bw, r in zip(bandwidths, run_once([(INTELLECT1, ["workload.steps=4", "algorithm.H=3",
                                                                f"topology.link.bandwidth={bw}"] + sets) for bw in bandwidths])):
                inner, sync = inner_and_sync(r["path"])
                round_time = 100 * 16 * inner + sync
                values.append(100 * 6 * parameters * tokens * 100 / round_time / peak if quantity == "mfu"
                              else 100 * 100 * 16 * inner / round_time)
            return (min(values), max(values)) if len(values) > 1 else values[0]
        return measure

    no_checkpointing = ("no activation checkpointing", ["compute.activation_checkpointing=false", "compute.memory_check=warn"], None)
    add("INTELLECT-1", "MFU, %", (36.2, 41.4), intellect("mfu"), "{:.1f}", [no_checkpointing])
    add("INTELLECT-1", "compute utilisation across continents (500 Mb/s here), %", 83.0, intellect("u", ("500Mbps",)), "{:.1f}", [])
    add("INTELLECT-1", "compute utilisation within the US (1 Gb/s here), %", 96.0, intellect("u", ("1Gbps",)), "{:.1f}", [])

    # Split fine-tuning: what the plain cut sends against rank 8 on BERT-base.
    def split(sets):
        sent = [r["total_bytes"] for r in run_once([(SPLIT_BERT, [f"algorithm.rank={k}"] + sets) for k in (0, 8)])]
        return sent[0] / sent[1]

    add("Split fine-tuning", "traffic against the plain cut (BERT-base, rank 8)", 96.0, split, "{:.0f}x", [],
        note="by construction (width 768 / rank 8)")
    return (command(f"build/testbed run {DEAR} --set workload.steps=5 --set 'algorithm={{name: dear}}' --set collective.library=none",
                    f"build/testbed run {INTELLECT1} --set workload.steps=4 --set algorithm.H=3 --set compute.activation_checkpointing=false --set compute.memory_check=warn")
            + table(["paper", "quantity", "paper", "ours", "off by", "ablations (value, off by)", "status"], rows))


ONE_GPU = "scenarios/paper/base/one_gpu.yaml"
MEASURED = ROOT / "docs/measurements/training_throughputs.csv"


def calibration_workload(row):
    """The zoo model a measured row runs (MPT-7B as the GPT of its published shapes)."""
    m, seq = row["model"], row["sequence"]
    if m == "resnet50":
        return "model: resnet50, dataset: imagenet_synthetic"
    if m in ("bert_base", "bert_large"):
        return f"model: bert, dataset: brown_genres, bert: {{preset: {m[5:]}, sequence: {seq}}}"
    if m == "gpt2_124m":
        return f"model: gpt, dataset: brown, gpt: {{preset: gpt2_124m, context: {seq}}}"
    if m == "mpt_7b":
        return ("model: gpt, dataset: brown, gpt: {preset: gpt2_124m, layers: 32, width: 4096, heads: 32, "
                f"vocab: 50368, context: {seq}}}")
    raise ValueError(f"no zoo model for {m}")


@block("test")
def compute_calibration(tb):
    """The roofline's step against published measured training throughputs, one GPU each
    (docs/measurements/training_throughputs.csv): projected samples a second (or MFU as llm-foundry
    counts it) beside the measured figure, and which rows fitted the efficiencies."""
    import csv
    rows = list(csv.DictReader(MEASURED.open()))
    calls = []
    for r in rows:
        optimizer = "{name: sgd, momentum: 0.9}" if r["model"] == "resnet50" else "{name: adamw}"
        calls.append((ONE_GPU, [f"workload={{{calibration_workload(r)}, batch_size: {r['batch']}, steps: 2, train: false}}",
                                f"optimizer={optimizer}",
                                f"compute={{model: flops, device: {r['device']}, dtype: {r['dtype']}, attention: {r['attention']}, "
                                f"memory_format: {r['memory_format']}, memory_check: off}}"]))
    results = tb.runs(calls)
    table_rows = []
    for r, res in zip(rows, results):
        step = res["projected_time_s"] / res["steps_completed"]
        per_second = int(r["batch"]) / step
        if r["unit"] == "mfu":
            T, N = int(r["sequence"]), res["model_parameters"]
            peak = {"a100": 312e12, "h100": 989e12}[r["device"]]
            projected = per_second * (6 * N * T + 12 * 32 * 4096 * T * T) / peak
            shown = lambda x: f"{100 * x:.1f} % MFU"
        else:
            projected = per_second
            shown = lambda x: f"{x:.0f} a s"
        model = r["model"].replace("_", " ") + (f" (T {r['sequence']})" if r["sequence"] != "0" else "")
        table_rows.append([r["id"], model, r["batch"], r["device"], r["dtype"] + ("" if r["model"] != "resnet50" else
                           ", " + r["memory_format"]), shown(float(r["measured"])), shown(projected),
                           f"{projected / float(r['measured']):.2f}", r["role"], f"{r['source']} ({r['date']})"])
    return (command(f"build/testbed run {ONE_GPU} --set 'workload={{model: resnet50, dataset: imagenet_synthetic, batch_size: 256, steps: 2, train: false}}' --set 'compute={{model: flops, device: a100, dtype: fp16, memory_format: channels_last, memory_check: off}}'")
            + table(["", "model", "batch", "device", "dtype", "measured", "projected", "ratio", "role", "source"], table_rows))


SECOND_ORDER = "scenarios/optimizers/eva.yaml"


@block("full")
def second_order_cnn(tb):
    """Eva, K-FAC and DP-KFAC against SGD and AdamW under DDP on the default ring's 4 nodes (the
    CNN, 300 steps of 64 a node), at 100 Mb/s and 10 Gb/s: accuracy by step and by projected time."""
    optimizers = [("SGD", "{name: sgd, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}"),
                  ("AdamW", "{name: adamw, lr: 1.0e-3, weight_decay: 0.01}"),
                  ("Eva", "{name: eva, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4, damping: 0.03}"),
                  ("K-FAC", "{name: kfac, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4, damping: 0.03}"),
                  ("DP-KFAC", "{name: dp_kfac, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4, damping: 0.03}")]
    bandwidths = ["100Mbps", "10Gbps"]
    calls = [(SECOND_ORDER, [f"optimizer={o}", f"topology.link.bandwidth={bw}"]) for bw in bandwidths for _, o in optimizers]
    results = tb.runs(calls)
    rows = []
    for i, r in enumerate(results):
        bw, (label, _) = bandwidths[i // len(optimizers)], optimizers[i % len(optimizers)]
        with h5py.File(r["path"], "r") as f:
            steps, accuracy = f["eval"]["step"][:], f["eval"]["accuracy"][:]
            finished = f["train"]["time"][:].max(axis=1)  # when the last node finished each step
        at = {int(s): float(a) for s, a in zip(steps, accuracy)}
        reached = [int(s) for s, a in zip(steps, accuracy) if a >= 0.8]
        to_80 = f"{finished[reached[0] - 1]:.1f} s (step {reached[0]})" if reached else "not reached"
        rows.append([bw, label, f"{at.get(100, float('nan')):.3f}", f"{r['final_accuracy']:.3f}",
                     f"{r['projected_time_s']:.1f} s", to_80, mb(r["total_bytes"] / 4 / r["steps_completed"])])
    return (command(f"build/testbed run {SECOND_ORDER} --set 'optimizer={optimizers[3][1]}' --set topology.link.bandwidth=10Gbps")
            + table(["link", "optimizer", "accuracy at step 100", "final accuracy", "projected time", "first eval at 80 %",
                     "sent a node a step"], rows))


SPLIT_GPT = "scenarios/algorithms/split.yaml"
SPLIT_BERT = "scenarios/paper/split_bert.yaml"


@block("full")
def split_finetuning(tb):
    """Split fine-tuning at rank 8 against the plain cut (rank 0): the tiny GPT pre-trained by a
    testbed run (DDP over the two edges, the same steps; no pretrained weights are on the
    machine), then fine-tuned on two edges (each its own model and data) and BERT-base projected
    on one; bytes a step each way, step time, each edge's model at the end, and the traffic ratio
    beside h / r."""
    ranks = [8, 0]
    start = tb.scratch / "split_pretrained.pt"
    pre = tb.run(SPLIT_GPT, "algorithm={name: ddp}", f"output.checkpoint={start}")
    with h5py.File(pre["path"], "r") as f:
        pre_accuracy = float(f["eval"]["accuracy"][-1])
        pre_loss = float(f["eval"]["loss"][-1])
    trained = tb.runs([(SPLIT_GPT, [f"algorithm.rank={r}", f"workload.init_from={start}"]) for r in ranks])
    projected = tb.runs([(SPLIT_BERT, [f"algorithm.rank={r}"]) for r in ranks])
    rows, sent = [], {}
    for r, res in zip(ranks, trained):
        with h5py.File(res["path"], "r") as f:
            accuracy = f["eval"]["replica_accuracy"][-1]
            loss = f["eval"]["replica_loss"][-1]
            sent[("gpt", r)] = int(f["comm"]["bytes"][0][0])
        rows.append(["tiny GPT (h 128), 2 edges, 300 steps from the pre-trained start", "plain cut" if r == 0 else f"rank {r}",
                     mb(sent[("gpt", r)]), f"{res['projected_time_s'] / res['steps_completed'] * 1e3:.0f} ms",
                     " / ".join(f"{a:.3f}" for a in accuracy), " / ".join(f"{math.exp(l):.2f}" for l in loss)])
    for r, res in zip(ranks, projected):
        sent[("bert", r)] = res["total_bytes"] // 2 // res["steps_completed"]
        rows.append(["BERT-base (h 768), 1 edge, projected", "plain cut" if r == 0 else f"rank {r}", mb(sent[("bert", r)]),
                     f"{res['projected_time_s'] / res['steps_completed'] * 1e3:.0f} ms", "—", "—"])
    ratio = lambda m: sent[(m, 0)] / sent[(m, 8)]
    return (command(f"build/testbed run {SPLIT_GPT} --set 'algorithm={{name: ddp}}' --set output.checkpoint=pre.pt",
                    f"build/testbed run {SPLIT_GPT} --set algorithm.rank=0 --set workload.init_from=pre.pt",
                    f"build/testbed run {SPLIT_BERT} --set algorithm.rank=0")
            + table(["run", "cut", "activations an edge sends a step", "projected step", "edges' next-byte accuracy",
                     "edges' perplexity"], rows)
            + f"\nThe pre-trained start (DDP, 300 steps): next-byte accuracy {pre_accuracy:.3f}, perplexity "
            f"{math.exp(pre_loss):.2f}.\n"
            + f"\nThe plain cut sends {ratio('gpt'):.0f}x the rank-8 cut's bytes on the tiny GPT (h / r = 128 / 8 = 16) "
            f"and {ratio('bert'):.0f}x on BERT-base (768 / 8 = 96, the paper's 96x); the gradient coming back is the "
            "same size.\n")


FAT_TREE = "bench/scenarios/gpt2_ddp_fat_tree.yaml"


@block("full")
def flow_against_ns3_at_scale(tb):
    """One all-reduce of 16 MB a rank, flow against ns-3, on 16 and 64 hosts of 4 GPUs (10 Gb/s
    NICs) and on a k = 16 fat-tree of 100 Gb/s at 64 and 256 hosts; ring and hierarchical (hosts
    as clusters on the GPU hosts; on the fat-tree, racks: each edge switch's k / 2 = 8 hosts, and
    pods: 64 hosts, whose leader gathers 63 buffers at once). The ring's NIC bound is 2 (p - 1) / p
    of the buffer over the NIC rate."""
    size = 16e6
    common = ["algorithm={name: ddp, overlap: false}"]
    backends = ("network.backend", ["flow", "ns3"])
    racks = lambda n: "[" + ", ".join("[" + ", ".join(str(8 * c + i) for i in range(8)) + "]" for c in range(n // 8)) + "]"
    # (label, scenario, nodes, NIC rate, collective, extra --set)
    cases = []
    for nodes in (64, 256):
        cluster = f"{nodes // 4} x 4 GPUs"
        cases += [(cluster, DEAR, nodes, 10e9, "ring", []), (cluster, DEAR, nodes, 10e9, "hierarchical", [])]
    for nodes in (64, 256):
        cluster = f"fat-tree, {nodes} hosts"
        cases += [(cluster, FAT_TREE, nodes, 100e9, "ring", []),
                  (cluster, FAT_TREE, nodes, 100e9, "hierarchical, racks", [f"collective.clusters={racks(nodes)}"]),
                  (cluster, FAT_TREE, nodes, 100e9, "hierarchical, pods", [])]
    grid = lambda c: tb.netbench_grid(c[1], "allreduce", "16MB",
                                      [f"nodes={c[2]}", f"collective.algorithm={c[4].split(',')[0]}"] + common + c[5],
                                      [backends])
    with concurrent.futures.ThreadPoolExecutor(tb.jobs) as pool:
        results = list(pool.map(grid, cases))
    rows = []
    for (cluster, scenario, nodes, nic, algorithm, sets), r in zip(cases, results):
        flow, ns3 = r[0]["simulated"], r[1]["simulated"]
        bound = f"{2 * (nodes - 1) / nodes * size * 8 / nic * 1e3:.2f} ms" if algorithm == "ring" else ""
        rows.append([cluster, algorithm, bound, f"{flow * 1e3:.2f} ms", f"{ns3 * 1e3:.2f} ms", f"{flow / ns3:.3f}"])
    return (command(f"build/testbed netbench {DEAR} --collective allreduce --size 16MB --set nodes=N "
                    "--set 'algorithm={name: ddp, overlap: false}' --set collective.algorithm=A --set network.backend=B",
                    f"build/testbed netbench {FAT_TREE} ... (the same; racks: --set 'collective.clusters=[[0, ..., 7], [8, ..., 15], ...]')")
            + table(["cluster", "all-reduce", "ring's NIC bound", "flow", "ns-3", "flow / ns-3"], rows))


@block("full")
def paper_compression(tb):
    per_step = ("projected time a step", lambda r: f"{1000 * r['projected_time_s'] / r['steps_completed']:.2f} ms")
    # Only the two factors: the grid's other keys hold one value each.
    return sweep_table(tb, "scenarios/paper/compression_bandwidth.yaml",
                       [per_step, ("bytes", lambda r: mb(r["total_bytes"])),
                        ("accuracy", lambda r: f"{r['final_accuracy']:.4f}")],
                       lambda row: f"`{', '.join(row['algorithm'].splitlines())}`, {row['topology.link.bandwidth']}")


@block("full")
def vhl_reproduction(tb):
    """FedAvg against FedAvg + VHL over 100 clients under Dirichlet 0.1, as the scenarios are
    (stateless clients, lr 0.05) and closer to VHL's reference (clients keep their optimizer,
    lr 0.01): accuracy per round, and the figure docs/figures/vhl_accuracy_per_round.png
    (analysis.figures, figure 8)."""
    common = ["workload.eval_every=10", "threads=1"]
    reference = ["algorithm.client_state=memory", "optimizer.lr=0.01"]
    scenarios = ["scenarios/federated/fedavg_100.yaml", "scenarios/federated/fedavg_vhl_100.yaml"]
    calls = [(s, common) for s in scenarios] + [(s, common + reference) for s in scenarios]
    results = tb.runs(calls)
    accuracy = []
    for r in results:
        with h5py.File(r["path"], "r") as f:
            accuracy.append(f["/eval/accuracy"][()])
    sys.path.insert(0, str(ROOT))
    from analysis import figures
    from analysis.load import load_sweep
    both = tb.scratch / "vhl"
    both.mkdir(exist_ok=True)
    names = ["fedavg.h5", "fedavg_vhl.h5", "fedavg_stateful.h5", "fedavg_vhl_stateful.h5"]
    for r, name in zip(results, names):
        os.link(r["path"], both / name)
    sweep = load_sweep(both)
    sweep.source = "scenarios/federated/fedavg_100.yaml, fedavg_vhl_100.yaml"
    save_png(figures.fig_accuracy_per_round(sweep), "vhl_accuracy_per_round")

    def first(acc, target):
        hit = [i + 1 for i, a in enumerate(acc) if a >= target]
        return str(hit[0]) if hit else "never"

    rows = [[f"accuracy after round {k}"] + [f"{a[k - 1]:.4f}" for a in accuracy] for k in (10, 25, 50, 75, 100)]
    rows.append(["mean of rounds 91-100"] + [f"{a[-10:].mean():.4f}" for a in accuracy])
    rows.append(["best round's"] + [f"{a.max():.4f}" for a in accuracy])
    for target in (0.6, 0.7):
        rows.append([f"first round at {target:.0%}"] + [first(a, target) for a in accuracy])
    rows.append(["final accuracy (whole test split)"] + [f"{r['final_accuracy']:.4f}" for r in results])
    rows.append(["projected time"] + [f"{r['projected_time_s']:.3f} s" for r in results])
    lines = [f"build/testbed run {s} --set workload.eval_every=10 --set threads=1" for s in scenarios]
    lines += [f"build/testbed run {s} --set workload.eval_every=10 --set threads=1 "
              "--set algorithm.client_state=memory --set optimizer.lr=0.01" for s in scenarios]
    return command(*lines) + table(["", "FedAvg", "FedAvg + VHL", "FedAvg, stateful, lr 0.01",
                                    "FedAvg + VHL, stateful, lr 0.01"], rows)


@block("full")
def paper_bandwidth_latency(tb):
    return sweep_table(tb, "scenarios/paper/bandwidth_latency.yaml", SUMMARY, run_label)


# --- driver --------------------------------------------------------------------------------------


def current_blocks():
    """{name: (file, body)} for every marker in the docs."""
    found = {}
    for path in DOCS:
        for m in MARKER.finditer(path.read_text()):
            if m["name"] in found:
                sys.exit(f"doc_numbers: block '{m['name']}' appears twice ({found[m['name']][0]} and {path})")
            found[m["name"]] = (path, m["body"])
    return found


LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?:#[^)]*)?\)")


def broken_links():
    """Relative links and images in the docs whose file is not in the repository."""
    broken = []
    for path in DOCS:
        for m in LINK.finditer(path.read_text()):
            target = m["target"]
            if re.match(r"[a-z]+:", target):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="fail if a block differs from the binary's output")
    mode.add_argument("--write", action="store_true", help="rewrite the blocks in the docs")
    mode.add_argument("--list", action="store_true", help="list the blocks and their tiers")
    parser.add_argument("names", nargs="*", help="only these blocks")
    parser.add_argument("--tier", choices=["test", "full"], default="full",
                        help="test: only the cheap blocks; full: all (default)")
    parser.add_argument("--binary", default=str(ROOT / "build" / "testbed"))
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()

    docs = current_blocks()
    for name in docs:
        if name not in BLOCKS:
            sys.exit(f"doc_numbers: {docs[name][0]} has a block '{name}' that no function makes")
    if args.list:
        for b in BLOCKS.values():
            where = docs[b.name][0].relative_to(ROOT) if b.name in docs else "(not in the docs)"
            print(f"{b.name:28} {b.tier:5} {where}")
        return 0
    names = args.names or [n for n, b in BLOCKS.items() if args.tier == "full" or b.tier == "test"]
    for name in names:
        if name not in BLOCKS:
            sys.exit(f"doc_numbers: no block '{name}' (--list shows them)")
        if name not in docs:
            sys.exit(f"doc_numbers: block '{name}' is in no docs page; add its markers first")

    failed = []
    if args.check and not args.names:
        for link in broken_links():
            failed.append("links")
            print(f"broken link: {link}")
    with tempfile.TemporaryDirectory(prefix="doc_numbers_") as scratch:
        tb = Testbed(args.binary, scratch, args.jobs)
        for name in names:
            path, old = docs[name]
            began = time.monotonic()
            tb.environments = set()
            try:
                new = with_environment(BLOCKS[name].make(tb), tb.environments)
            except Skip as why:
                print(f"{name}: skipped ({why})")
                continue
            except RuntimeError as why:  # the binary failed: report it, go on with the other blocks
                print(f"{name}: FAILED\n{why}")
                failed.append(name)
                continue
            # The numbers decide: the same numbers made under another environment are up to date.
            if ENVIRONMENT.sub("", new) == ENVIRONMENT.sub("", old) and (args.check or new == old or ENVIRONMENT.search(old)):
                print(f"{name}: up to date ({time.monotonic() - began:.1f} s)")
                continue
            if args.write:
                text = path.read_text()
                text = text.replace(f"<!-- numbers: {name} -->\n{old}<!-- /numbers -->",
                                    f"<!-- numbers: {name} -->\n{new}<!-- /numbers -->")
                path.write_text(text)
                print(f"{name}: rewritten in {path.relative_to(ROOT)}")
            else:
                failed.append(name)
                print(f"{name}: STALE in {path.relative_to(ROOT)}")
                sys.stdout.write(environment_note(old, new))
                print("  the binary now gives:")
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                           "documented", "binary"))
    if failed:
        print(f"\n{len(failed)} stale block(s): {' '.join(failed)}. "
              f"Regenerate with: python3 scripts/doc_numbers.py --write {' '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
