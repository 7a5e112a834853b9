"""The default scenario's training as a plain PyTorch loop, beside the testbed: host ms a step.

    python3 bench/pytorch_loop.py [--steps 100] [--pairs 3] [--binary build/testbed]

The loop is what a researcher would write without the testbed: Debian's PyTorch, one process,
the four replicas of scenarios/100mbps_ring.yaml (the CNN on Fashion-MNIST, batch 64 each, an
iid quarter of the training set each, AdamW lr 1e-3 and weight decay 0.01) stepped one after
another: each replica's forward and backward, the gradients averaged (what DDP's all-reduce
leaves), then each replica's AdamW step. No network: it simulates nothing.

The testbed runs the same scenario, simulating every packet of DDP's all-reduces over ns-3.
Its host ms a step is the difference of two runs' host time (/summary host_time_s) over their
difference in steps (--steps and a fifth of it, both with one evaluation at the end), so
start-up, loading the data and the final evaluation cancel. The loop's is the mean of --steps
timed steps after 5 warm-up ones. The two alternate, --pairs times; the median of each, and
the ratio, are printed with each side's threads and BLAS.
"""

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
MEAN, STD = 0.2860, 0.3530  # training/data/fashion_mnist.h


def load_images(torch):
    with gzip.open(os.path.join(DATA, "train-images-idx3-ubyte.gz")) as f:
        images = torch.frombuffer(bytearray(f.read()[16:]), dtype=torch.uint8).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(DATA, "train-labels-idx1-ubyte.gz")) as f:
        labels = torch.frombuffer(bytearray(f.read()[8:]), dtype=torch.uint8).long()
    return (images.float() / 255 - MEAN) / STD, labels


def cnn(torch):
    """The testbed's `cnn` (training/models/models.cpp): two 5 x 5 convolutions with pooling, two
    dense layers, 80 202 parameters at 10 classes."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(512, 128), nn.ReLU(), nn.Linear(128, 10))


def loop_ms_a_step(torch, images, labels, steps, nodes=4, batch=64, warmup=5):
    torch.manual_seed(0)
    first = cnn(torch)
    replicas = [first] + [cnn(torch) for _ in range(nodes - 1)]
    for r in replicas[1:]:
        r.load_state_dict(first.state_dict())  # DDP's broadcast of the first replica
    optimizers = [torch.optim.AdamW(r.parameters(), lr=1e-3, weight_decay=0.01) for r in replicas]
    shards = torch.randperm(len(images)).chunk(nodes)
    start = None
    for step in range(warmup + steps):
        if step == warmup:
            start = time.perf_counter()
        for n, (model, opt) in enumerate(zip(replicas, optimizers)):
            opt.zero_grad(set_to_none=True)
            at = (step * batch) % (len(shards[n]) - batch)
            index = shards[n][at:at + batch]
            torch.nn.functional.cross_entropy(model(images[index]), labels[index]).backward()
        with torch.no_grad():  # the all-reduce's result: every replica holds the mean gradient
            for grads in zip(*(list(p.grad for p in r.parameters()) for r in replicas)):
                mean = torch.stack(grads).mean(0)
                for g in grads:
                    g.copy_(mean)
        for opt in optimizers:
            opt.step()
    return (time.perf_counter() - start) / steps * 1e3


def testbed_host_s(binary, steps):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([binary, "run", os.path.join(ROOT, "scenarios/100mbps_ring.yaml"), "-q", "-o",
                        os.path.join(out, "r.h5"), "--set", f"workload.steps={steps}",
                        "--set", f"workload.eval_every={steps}", "--set", "workload.eval_samples=256"],
                       check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        import h5py
        with h5py.File(os.path.join(out, "r.h5")) as f:
            return float(f["summary"].attrs["host_time_s"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "testbed"))
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="the loop's intra-op threads (default all cores, as the testbed's threads: 0)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)

    images, labels = load_images(torch)
    short = max(args.steps // 5, 1)
    loop, testbed = [], []
    for pair in range(args.pairs):
        loop.append(loop_ms_a_step(torch, images, labels, args.steps))
        testbed.append((testbed_host_s(args.binary, args.steps) - testbed_host_s(args.binary, short)) /
                       (args.steps - short) * 1e3)
        print(f"pair {pair + 1}: PyTorch loop {loop[-1]:.1f} ms a step, testbed {testbed[-1]:.1f} ms a step",
              flush=True)
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,]+)", config)
    blas = f"BLAS {blas.group(1)}" if blas else "BLAS ?"
    onednn = "oneDNN on" if "USE_MKLDNN=ON" in config else "oneDNN off"
    print(f"PyTorch loop: torch {torch.__version__}, {torch.get_num_threads()} threads, {blas}, {onednn} "
          f"(native kernels), replicas one after another")
    print("testbed: scenarios/100mbps_ring.yaml as shipped (threads 0: all cores; numerics portable: OpenBLAS "
          "Haswell, oneDNN off), ns-3 simulating every packet")
    a, b = statistics.median(loop), statistics.median(testbed)
    print(f"median host ms a step: PyTorch loop {a:.1f}, testbed {b:.1f}; loop / testbed {a / b:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
