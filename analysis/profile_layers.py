"""Measured per-module times of a training step, as `compute: {model: profile, file: F}` reads them.

    python3 -m analysis.profile_layers --model resnet50 --batch 64 --device cuda --out resnet50.csv

Runs the model's forward, loss, backward and optimizer step on this machine's device (a few
warm-up steps, then the median of --steps measured ones) and writes one row a module:
forward and backward milliseconds under the testbed's layer names (torchvision's for the
resnets, densenet201 and vit_b_16; the zoo's own PyTorch GPT-2 and BERT under the testbed's
names),
the row `*` for what the step spent outside them (functional ops between modules, the loss,
a tied head) and the row `optimizer`. The testbed splits a row among the layers it holds by
its roofline and refuses a file whose rows do not name its model's layers.

Timing: forward from a module's pre-hook to its hook; backward from the moment the gradient
of a module's output exists to the moment the previous module's does (autograd runs the
modules in reverse), so the functional ops between two modules count to the later one.
CUDA events on a GPU, the wall clock (each op synchronous) on the CPU. torchvision's ReLUs
run out of place here, so gradient hooks can see their outputs.
"""

import argparse
import datetime
import statistics
import sys
import time

RESNETS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
MODELS = RESNETS + ("densenet201", "vit_b_16", "gpt2_124m", "gpt2_355m", "gpt2_774m", "gpt2_1558m", "bert_base",
                    "bert_large")


def _gpt(name, torch):
    """nanoGPT's GPT-2 (pre-norm blocks, tied head) under the testbed's module names."""
    nn = torch.nn
    layers, heads, width = {"gpt2_124m": (12, 12, 768), "gpt2_355m": (24, 16, 1024),
                            "gpt2_774m": (36, 20, 1280), "gpt2_1558m": (48, 25, 1600)}[name]
    vocab, context = 50257, 1024

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, heads, c // heads).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) / (c // heads) ** 0.5
            att = att.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            return self.proj((att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn = nn.LayerNorm(width), Attention()
            self.ln2, self.fc, self.fc_proj = nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc_proj(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(width)

        def forward(self, tokens):
            x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.t()

    model = GPT()
    units = [("wte", model.wte), ("wpe", model.wpe)] + [(f"blocks.{i}", b) for i, b in enumerate(model.blocks)]
    return model, units + [("ln_f", model.ln_f)], context


def _bert(name, torch, head):
    """Hugging Face's BERT (post-norm blocks) under the testbed's module names, with its
    classifier (15 classes, brown_genres') or its pre-training heads (masked LM tied to the word
    embeddings, next sentence)."""
    nn = torch.nn
    layers, heads, width = {"bert_base": (12, 12, 768), "bert_large": (24, 16, 1024)}[name]
    vocab = 30522

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.word, self.position = nn.Embedding(vocab, width), nn.Embedding(512, width)
            self.token_type, self.norm = nn.Embedding(2, width), nn.LayerNorm(width, eps=1e-12)

        def forward(self, tokens):
            t = tokens.shape[1]
            positions = torch.arange(t, device=tokens.device)
            return self.norm(self.word(tokens) + self.position(positions) + self.token_type(torch.zeros_like(positions)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))
            self.attention_output, self.attention_norm = nn.Linear(width, width), nn.LayerNorm(width, eps=1e-12)
            self.intermediate, self.output = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.output_norm = nn.LayerNorm(width, eps=1e-12)

        def forward(self, x):
            b, t, c = x.shape
            split = lambda y: y.view(b, t, heads, c // heads).transpose(1, 2)  # noqa: E731
            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            att = ((q @ k.transpose(-2, -1)) / (c // heads) ** 0.5).softmax(-1)
            x = self.attention_norm(x + self.attention_output((att @ v).transpose(1, 2).reshape(b, t, c)))
            return self.output_norm(x + self.output(nn.functional.gelu(self.intermediate(x))))

    class MaskedLM(nn.Module):
        def __init__(self, word):
            super().__init__()
            self.transform, self.norm, self.word = nn.Linear(width, width), nn.LayerNorm(width, eps=1e-12), word
            self.bias = nn.Parameter(torch.zeros(vocab))

        def forward(self, x):
            return self.norm(nn.functional.gelu(self.transform(x))) @ self.word.weight.t() + self.bias

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.pooler = nn.Linear(width, width)
            if head == "pretraining":
                self.mlm, self.next_sentence = MaskedLM(self.embeddings.word), nn.Linear(width, 2)
            else:
                self.classifier = nn.Linear(width, 15)

        def forward(self, tokens):
            x = self.embeddings(tokens)
            for block in self.layers:
                x = block(x)
            pooled = torch.tanh(self.pooler(x[:, 0]))
            if head == "pretraining":  # the masked-LM logits; the next-sentence loss rides on them
                return self.mlm(x), self.next_sentence(pooled)
            return self.classifier(pooled)

    model = Bert()
    units = [("embeddings", model.embeddings)] + [(f"layers.{i}", b) for i, b in enumerate(model.layers)]
    units.append(("pooler", model.pooler))
    units += [("mlm", model.mlm), ("next_sentence", model.next_sentence)] if head == "pretraining" \
        else [("classifier", model.classifier)]
    return model, units, 128


def build(name, torch, torchvision, head="classification"):
    """(model, [(row name, module) in forward order], input side or context)."""
    if name.startswith("gpt2_"):
        return _gpt(name, torch)
    if name.startswith("bert_"):
        return _bert(name, torch, head)
    model = getattr(torchvision.models, name)()
    for m in model.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    units = []
    if name in RESNETS:
        for child_name, child in model.named_children():
            if isinstance(child, torch.nn.Sequential):  # layer1 .. layer4: a row a block
                units += [(f"{child_name}.{i}", block) for i, block in enumerate(child)]
            else:
                units.append((child_name, child))
    elif name == "densenet201":
        for child_name, child in model.features.named_children():
            if child_name.startswith("denseblock"):
                units += [(f"features.{child_name}.{n}", m) for n, m in child.named_children()]
            else:
                units.append((f"features.{child_name}", child))
        units.append(("classifier", model.classifier))
    else:  # vit_b_16: the testbed numbers the blocks 0 .. 11, torchvision names them encoder_layer_N
        units = [("conv_proj", model.conv_proj)]
        units += [(f"encoder.layers.{i}", m) for i, m in enumerate(model.encoder.layers)]
        units += [("encoder.ln", model.encoder.ln), ("heads.head", model.heads.head)]
    return model, units, 224


class Clock:
    """Marks on the device's timeline: CUDA events on a GPU, the wall clock on the CPU."""

    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def ms(self, start, end):
        return start.elapsed_time(end) if self.cuda else (end - start) * 1e3


def profile(name, batch, device_name, steps=5, warmup=2, optimizer="adamw", side=None, context=None,
            head="classification"):
    """{row: [forward ms, backward ms]} (medians over the measured steps), and a description."""
    import torch
    import torchvision

    torch.manual_seed(0)
    device = torch.device(device_name)
    model, units, size = build(name, torch, torchvision, head)
    model.to(device).train()
    opt = (torch.optim.AdamW if optimizer == "adamw" else torch.optim.SGD)(model.parameters(), lr=1e-4)
    clock = Clock(torch, device)
    if name.startswith("gpt2_") or (name.startswith("bert_") and head == "pretraining"):
        vocab, t = (50257 if name.startswith("gpt2_") else 30522), context or size
        inputs = torch.randint(0, vocab, (batch, t), device=device)
        targets = torch.randint(0, vocab, (batch, t), device=device)
    elif name.startswith("bert_"):
        inputs = torch.randint(0, 30522, (batch, context or size), device=device)
        targets = torch.randint(0, 15, (batch,), device=device)
    else:
        s = side or size
        inputs = torch.randn(batch, 3, s, s, device=device)
        targets = torch.randint(0, 1000, (batch,), device=device)

    marks = {}  # per step: row -> [forward start, forward end, gradient of its output]

    def hooks(row):
        def pre(_module, _args):
            marks.setdefault(row, [None, None, None])[0] = clock.mark()

        def post(_module, _args, output):
            marks[row][1] = clock.mark()
            if isinstance(output, torch.Tensor) and output.requires_grad:
                output.register_hook(lambda grad: marks[row].__setitem__(2, clock.mark()) or None)
        return pre, post

    for row, module in units:
        pre, post = hooks(row)
        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)

    rows = [row for row, _ in units]
    samples = {row: ([], []) for row in rows + ["*", "optimizer"]}
    for step in range(warmup + steps):
        marks.clear()
        opt.zero_grad(set_to_none=True)
        start = clock.mark()
        logits = model(inputs)
        extra = 0
        if isinstance(logits, tuple):  # BERT's pre-training: masked LM at every position, and next sentence
            logits, next_sentence = logits
            extra = torch.nn.functional.cross_entropy(next_sentence, targets[:, 0] % 2)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)) + extra
        forward_end = clock.mark()
        loss.backward()
        backward_end = clock.mark()
        opt.step()
        step_end = clock.mark()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if step < warmup:
            continue
        # Backward of row i: from its output's gradient to the previous row's (or the end).
        forward_sum = backward_sum = 0.0
        for i, row in enumerate(rows):
            f = clock.ms(marks[row][0], marks[row][1])
            grad = marks[row][2]
            earlier = next((marks[r][2] for r in reversed(rows[:i]) if marks[r][2] is not None), backward_end)
            b = clock.ms(grad, earlier) if grad is not None else 0.0
            samples[row][0].append(f)
            samples[row][1].append(b)
            forward_sum, backward_sum = forward_sum + f, backward_sum + b
        samples["*"][0].append(max(clock.ms(start, forward_end) - forward_sum, 0.0))
        samples["*"][1].append(max(clock.ms(forward_end, backward_end) - backward_sum, 0.0))
        samples["optimizer"][0].append(clock.ms(backward_end, step_end))
        samples["optimizer"][1].append(0.0)
    times = {row: [statistics.median(f), statistics.median(b)] for row, (f, b) in samples.items()}
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    what = (f"model {name}, batch {batch}, device {device_name} ({gpu}), torch {torch.__version__}, fp32, "
            f"optimizer {optimizer}, median of {steps} steps after {warmup}, "
            f"{datetime.date.today().isoformat()}")
    return times, what


def write_csv(times, what, path):
    with open(path, "w") as f:
        f.write(f"# {what}\n")
        f.write("layer,forward_ms,backward_ms\n")
        for row, (forward, backward) in times.items():
            f.write(f"{row},{forward:.6f},{backward:.6f}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.profile_layers", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, choices=MODELS)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:1 or cpu (default cuda)")
    parser.add_argument("--steps", type=int, default=5, help="measured steps, after 2 warm-up ones (default 5)")
    parser.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    parser.add_argument("--side", type=int, default=None, help="image side (default the model's, 224)")
    parser.add_argument("--context", type=int, default=None,
                        help="tokens a sample: GPT's context (default 1024), BERT's sequence (default 128)")
    parser.add_argument("--head", choices=("classification", "pretraining"), default="classification",
                        help="BERT's heads, as workload.bert.head")
    parser.add_argument("--out", default=None, help="the CSV (default MODEL.csv)")
    args = parser.parse_args(argv)
    if args.batch < 1 or args.steps < 1:
        parser.error("--batch and --steps must be at least 1")
    try:
        import torch  # noqa: F401  (Debian: python3-torch, python3-torchvision)
    except ImportError:
        print("profile_layers needs PyTorch and torchvision (Debian: python3-torch python3-torchvision)", file=sys.stderr)
        return 2
    times, what = profile(args.model, args.batch, args.device, args.steps, optimizer=args.optimizer,
                          side=args.side, context=args.context, head=args.head)
    out = args.out or f"{args.model}.csv"
    write_csv(times, what, out)
    print(f"wrote {out}: {len(times)} rows, {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
