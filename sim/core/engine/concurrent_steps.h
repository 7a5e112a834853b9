// Local steps of several nodes at once, one host thread each: when the engine may, and how.
#pragma once

#include <cstddef>
#include <functional>

#include "sim/config/scenario.h"
#include "training/algorithm.h"

namespace testbed {

// How many host threads train due nodes' steps together (1: one after another). More than one
// only where that changes no bit: portable numerics (their bits do not follow LibTorch's
// thread count, docs/numerics.md), an algorithm whose local steps are independent
// (Algorithm::concurrent_local_steps), a model that draws no random numbers in training (GPT's
// dropout draws from LibTorch's one global generator), a compute model that knows a step's
// time without measuring host seconds, and one process (a spread run trains on its cores already).
int concurrent_step_threads(const Scenario& scenario, const Algorithm& algorithm, bool compute_deterministic,
                            bool spread);

// Runs work(i) for every i in [0, items) on up to `threads` host threads (this one among them),
// each with one LibTorch intra-op thread, and puts LibTorch's thread count back after. Rethrows
// the exception of the lowest i that threw, once all have finished.
void run_concurrently(size_t items, int threads, const std::function<void(size_t)>& work);

}  // namespace testbed
