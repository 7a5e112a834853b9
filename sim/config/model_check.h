// What only the model can tell about a scenario (an adapter's rank against its layers, heads
// against width, the checkpoint `init_from` names), asked by the scenario's rules and answered
// by building the model once (sim/config/workload.cpp). Declared here without LibTorch, so the
// rules compile wherever LibTorch's headers do not (the clang fuzzing build).
#pragma once

#include <cstddef>

#include "sim/config/scenario.h"
#include "training/models/model_shapes.h"

namespace testbed {

// Throws std::invalid_argument for shapes that do not fit, std::runtime_error for a checkpoint
// that cannot be read. Returns the model's shapes (for the device-memory check).
ModelShapes check_model(const Scenario& scenario);
// How many Linear and Conv2d layers the model offers a second-order optimizer (Model::layer_taps;
// 0 for a model described from its configuration, which is never built).
size_t second_order_layers(const Scenario& scenario);

}  // namespace testbed
