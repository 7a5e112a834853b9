// Pieces the algorithms share: the local optimizer step, wire formats, seeded choices.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "training/algorithm.h"
#include "training/algorithms/wire_format.h"
#include "training/replica.h"

namespace testbed {

// One step of local training: a batch, its gradients, the inner optimizer. Returns the loss.
double local_sgd_step(Replica& replica, const Dataset& data, int batch_size);

// Bytes per element of a wire format: fp32 4, bf16 and fp16 2, fp4 0.5 (e2m1).
double wire_bytes(WireFormat format);
// `x` rounded to the wire format and back to float32: what the receiver decodes. fp4 is
// e2m1 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6) with one per-tensor scale, max|x| / 6.
torch::Tensor to_wire(const torch::Tensor& x, WireFormat format);

// `count` distinct indices of 0..n-1, sorted, drawn from `seed` alone, so every node that
// asks with the same seed gets the same indices and none need to travel.
torch::Tensor seeded_indices(int64_t n, int64_t count, uint64_t seed);

// Per-node tensors by name into an algorithm's state (undefined ones left out), and back out of
// it (as copies; a name the state lacks leaves the tensor undefined).
void put_tensors(AlgorithmState& state, std::initializer_list<std::pair<const char*, const torch::Tensor*>> named);
void take_tensors(const AlgorithmState& state, std::initializer_list<std::pair<const char*, torch::Tensor*>> named);

// An op over the given tensor with a tag; the rest defaulted.
CommOp make_op(CommKind kind, std::string tag, torch::Tensor buffer, int delay = 0);

// A float32 vector of `elements` that owns one element (a broadcast view): a projection's op
// buffer, whose size is all anyone reads. A 7B model's gradient costs 4 bytes.
torch::Tensor shape_only(int64_t elements);

// The NaN a projected step reports as its loss (no sample was seen).
double no_loss();

}  // namespace testbed
