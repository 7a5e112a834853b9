// Which low-rank adapter a model's dense layers carry, as a plain enum the scenario names
// (sim/config/choices.h) without reaching LibTorch.
#pragma once

namespace testbed {

// None trains every weight; LoRA trains A and B beside frozen weights; LoRA-FA freezes A too
// (training/models/dense.h).
enum class AdapterKind { None, Lora, LoraFa };

}  // namespace testbed
