// Factories from scenario sections; all randomness comes from named seed streams.
#include "sim/config/workload.h"

#include "sim/config/model_check.h"
#include "training/data/fashion_mnist.h"
#include "training/vhl.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "training/algorithms/algorithm_settings.h"
#include "training/algorithms/fsdp_units.h"
#include "training/algorithms/replica_groups.h"
#include "training/data/brown.h"
#include "training/data/fashion_mnist.h"
#include "training/data/shifts.h"
#include "training/data/synthetic.h"
#include "training/models/bert.h"
#include "training/models/checkpoint.h"
#include "training/models/gpt.h"
#include "training/models/imagenet.h"
#include "training/models/llama.h"
#include "training/numerics.h"
#include "training/seed_streams.h"

namespace testbed {

void configure_host(const Scenario& scenario) {
  int threads = scenario.threads > 0 ? scenario.threads : static_cast<int>(std::thread::hardware_concurrency());
  at::set_num_threads(std::max(1, threads));
  use_numerics(scenario.numerics);
  // OpenBLAS starts its own pool with one thread per core, which spins in sched_yield
  // beside LibTorch's OpenMP threads: measured 2x slower steps on 2 cores. LibTorch
  // parallelises around the BLAS calls, so BLAS itself runs on one thread.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
  // glibc's adaptive mmap threshold made LibTorch's activations come and go as fresh
  // mappings (4x the page faults of a bare loop); keep freed memory in the heap instead.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// A model described from its configuration is checked without building it (a 7B model would not
// fit before the memory estimate could refuse it); a projection needs only its shapes.
ModelShapes check_model(const Scenario& scenario) {
  if (!scenario.workload.train || shapes_from_config(scenario)) return model_shapes(scenario);
  return shapes_of(*make_model(scenario));
}

namespace {

std::string data_dir(const Scenario& s) {
  return s.workload.data_dir.empty() ? default_data_dir(s.workload.dataset) : s.workload.data_dir;
}

AdapterConfig adapter_config(const Scenario& s) {
  return {s.workload.adapter.kind, s.workload.adapter.rank, s.workload.adapter.alpha};
}

// A scenario's shape key: 0 keeps the preset's value.
void override_with(int& value, int given) {
  if (given) value = given;
}

GptConfig gpt_config(const Scenario& s) {
  const auto& g = s.workload.gpt;
  GptConfig c = gpt_preset(g.preset);
  for (auto [value, given] : {std::pair{&c.layers, g.layers},
                              {&c.heads, g.heads},
                              {&c.width, g.width},
                              {&c.context, g.context},
                              {&c.vocab, g.vocab}})
    override_with(*value, given);
  c.dropout = g.dropout;
  c.adapter = adapter_config(s);
  return c;
}

LlamaConfig llama_config(const Scenario& s) {
  const auto& g = s.workload.llama;
  LlamaConfig c = llama_preset(g.preset);
  for (auto [value, given] : {std::pair{&c.layers, g.layers},
                              {&c.heads, g.heads},
                              {&c.kv_heads, g.kv_heads},
                              {&c.width, g.width},
                              {&c.hidden, g.hidden},
                              {&c.context, g.context},
                              {&c.vocab, g.vocab}})
    override_with(*value, given);
  return c;
}

BertConfig bert_config(const Scenario& s) {
  const auto& b = s.workload.bert;
  BertConfig c = bert_preset(b.preset);
  for (auto [value, given] : {std::pair{&c.layers, b.layers},
                              {&c.heads, b.heads},
                              {&c.width, b.width},
                              {&c.sequence, b.sequence},
                              {&c.vocab, b.vocab}})
    override_with(*value, given);
  c.classes = static_cast<int>(brown_categories().size());  // brown_genres' labels
  c.pretraining = b.head == "pretraining";
  return c;
}

// A text model's window: its context or sequence.
int context_of(const Scenario& s) {
  if (s.workload.model == "llama") return llama_config(s).context;
  if (s.workload.model == "bert") return bert_config(s).sequence;
  return gpt_config(s).context;
}

SyntheticOptions synthetic_options(const Scenario& s) {
  const auto& y = s.workload.synthetic;
  return {y.task == "regression", y.inputs, y.outputs, y.hidden, y.train_samples, y.test_samples};
}

// Restricts a classification set to some labels (labels keep their numbers, so a model
// pretrained on one subset and fine-tuned on another shares its output layer).
Dataset keep_classes(Dataset data, const std::vector<int>& classes) {
  auto wanted = torch::tensor(std::vector<int64_t>(classes.begin(), classes.end()), torch::kInt64);
  auto train = torch::isin(data.train_targets, wanted).nonzero().flatten();
  auto test = torch::isin(data.test_targets, wanted).nonzero().flatten();
  data.train_inputs = data.train_inputs.index_select(0, train);
  data.train_targets = data.train_targets.index_select(0, train);
  data.train_groups = data.train_groups.index_select(0, train);
  data.test_inputs = data.test_inputs.index_select(0, test);
  data.test_targets = data.test_targets.index_select(0, test);
  return data;
}

}  // namespace

Dataset load_dataset(const Scenario& s) {
  const auto& w = s.workload;
  Dataset data;
  if (w.dataset == "fashion_mnist") {
    data = load_fashion_mnist(data_dir(s));
  } else if (w.dataset == "brown") {
    data = load_brown({data_dir(s), context_of(s), 0.1, stream_seed(s.seed, "brown_split")});
  } else if (w.dataset == "synthetic") {
    data = make_teacher_dataset(synthetic_options(s), stream_seed(s.seed, "teacher"));
  } else if (w.dataset == "brown_genres") {
    data = load_brown_genres({data_dir(s), context_of(s), 0.1, stream_seed(s.seed, "brown_split")});
  } else if (w.dataset == "imagenet_synthetic") {
    data = make_imagenet_stand_in(256, 64, imagenet_side(w.model), stream_seed(s.seed, "imagenet_synthetic"));
  } else {
    throw std::invalid_argument("unknown dataset '" + w.dataset + "'");
  }
  if (!w.classes.empty()) data = keep_classes(std::move(data), w.classes);
  for (const auto& shift : w.shifts) {
    data.test_variants.push_back({shift, shift_images(data.test_inputs, shift, stream_seed(s.seed, "shift"))});
  }
  return data;
}

const VhlOptions* vhl_options(const Scenario& s) {
  const auto* fed = std::get_if<FedAvgOptions>(&s.algorithm.options);
  return fed && fed->vhl ? &*fed->vhl : nullptr;
}

std::shared_ptr<Model> make_model(const Scenario& s, int node) {
  const auto& w = s.workload;
  // VHL trains the virtual samples as classes of their own: a head twice as wide.
  const int heads = vhl_options(s) ? 2 : 1;
  const bool own = node >= 0 && w.init == "independent";
  // A replica group's GPUs hold one replica: its initial weights are the group's.
  if (own && s.replica_group.grouped()) node /= s.replica_group.gpus;
  torch::manual_seed(own ? stream_seed(s.seed, "init", static_cast<uint64_t>(node) + 1) : stream_seed(s.seed, "init"));
  std::shared_ptr<Model> model;
  if (w.model == "gpt") {
    model = make_gpt(gpt_config(s));
  } else if (w.model == "llama") {
    model = make_llama(llama_config(s));
  } else if (w.model == "bert") {
    model = make_bert(bert_config(s));
  } else if (w.dataset == "synthetic") {
    auto o = synthetic_options(s);
    model = make_mlp(o.inputs, o.hidden, heads * o.outputs, adapter_config(s));
  } else if (w.dataset == "imagenet_synthetic") {
    model = make_imagenet_model(w.model, heads * 1000);
  } else {
    model = make_image_model(w.model, heads * 10, adapter_config(s));
  }
  if (!w.init_from.empty()) load_checkpoint(*model, w.init_from);
  // Split fine-tuning factors the weights as they stand now, loaded ones included.
  if (const auto* split = std::get_if<SplitOptions>(&s.algorithm.options); split && s.algorithm.name == "split")
    model->split(SplitConfig{split->layer, split->rank, split->residual});
  return model;
}

VirtualData make_vhl_data(const Scenario& s, const Dataset& data) {
  const VhlOptions* vhl = vhl_options(s);
  if (!vhl) throw std::logic_error("make_vhl_data: the scenario has no vhl section");
  if (s.workload.dataset != "fashion_mnist")
    throw std::invalid_argument("VHL's virtual images are made for fashion_mnist, not " + s.workload.dataset);
  const auto shape = data.train_inputs.sizes().slice(1).vec();
  const bool reference = vhl->normalisation == VhlNormalisation::Reference;  // wizard1203/VHL's (x - 0.5) / 0.25
  return make_virtual_data(data.outputs, vhl->virtual_samples, shape, reference ? 0.5 : kFashionMnistMean,
                           reference ? 0.25 : kFashionMnistStd, stream_seed(s.seed, "vhl_generator"));
}

OptimizerConfig optimizer_config(const Scenario& scenario, int node) {
  const auto& o = scenario.optimizer;
  OptimizerConfig c{o.name,
                    o.lr,
                    o.weight_decay,
                    o.momentum,
                    o.beta1,
                    o.beta2,
                    EvaOptions{o.damping_or_default(), o.kl_clip, o.factor_decay, o.kfac_batch_size}};
  c.kfac = KfacOptions{o.variant,
                       o.name == OptimizerKind::DpKfac,
                       o.damping_or_default(),
                       o.kl_clip,
                       o.factor_decay,
                       o.fac_update_freq,
                       o.kfac_update_freq};
  // Under DDP the layers are dealt over the fleet (their owners invert them); elsewhere each
  // node is its own fleet of one.
  if (scenario.algorithm.name == "ddp") {
    c.fleet = scenario.nodes;
    c.rank = node;
  }
  return c;
}

size_t second_order_layers(const Scenario& scenario) {
  return shapes_from_config(scenario) ? 0 : make_model(scenario)->layer_taps().size();
}

TrainingWork training_work(const Scenario& scenario, const Model& model) {
  return training_work(scenario, model.layer_costs());
}

bool shapes_from_config(const Scenario& scenario) { return scenario.workload.model == "llama"; }

namespace {

// Items of a model of identical blocks as built with one: block 0's (named `prefix` + "0.",
// contiguous) repeated as blocks 0..layers-1 in its place.
template <class T>
std::vector<T> repeat_block(const std::vector<T>& items, std::string T::*name, const std::string& prefix, int layers) {
  const std::string first = prefix + "0.";
  auto in_block = [&](const T& item) { return (item.*name).rfind(first, 0) == 0; };
  const auto begin = std::find_if(items.begin(), items.end(), in_block);
  const auto end = std::find_if_not(begin, items.end(), in_block);
  if (std::find_if(end, items.end(), in_block) != items.end())
    throw std::logic_error("model shapes: block 0's entries under '" + first + "' are not contiguous");
  std::vector<T> out(items.begin(), begin);
  for (int l = 0; l < layers; ++l) {
    for (auto it = begin; it != end; ++it) {
      out.push_back(*it);
      (out.back().*name).replace(0, first.size(), prefix + std::to_string(l) + ".");
    }
  }
  out.insert(out.end(), end, items.end());
  return out;
}

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;
};

}  // namespace

ModelShapes model_shapes(const Scenario& scenario) {
  if (shapes_from_config(scenario)) return llama_shapes(llama_config(scenario));
  // A projection of a transformer of identical blocks builds one block and repeats its names,
  // shapes and costs (GPT-2 1558M is sized without the 6 GB of its weights); a split model's
  // blocks differ, and training builds the model anyway.
  const bool gpt = scenario.workload.model == "gpt", bert = scenario.workload.model == "bert";
  const int layers = gpt ? gpt_config(scenario).layers : bert ? bert_config(scenario).layers : 0;
  if (scenario.workload.train || layers < 2 || scenario.algorithm.name == "split")
    return shapes_of(*make_model(scenario));
  Scenario one_block = scenario;
  (gpt ? one_block.workload.gpt.layers : one_block.workload.bert.layers) = 1;
  const ModelShapes one = shapes_of(*make_model(one_block));
  const std::string prefix = gpt ? "blocks." : "layers.";
  ModelShapes m = one;
  std::vector<NamedShape> named;
  for (size_t i = 0; i < one.names.size(); ++i) named.push_back({one.names[i], one.shapes[i]});
  m.names.clear();
  m.shapes.clear();
  for (auto& [name, shape] : repeat_block(named, &NamedShape::name, prefix, layers)) {
    m.names.push_back(name);
    m.shapes.push_back(shape);
  }
  m.layers = repeat_block(one.layers, &LayerCost::name, prefix, layers);
  // Every parameter, frozen ones too, is some layer's weights (each counted where it is held).
  double block = 0;
  for (const LayerCost& c : one.layers)
    if (c.name.rfind(prefix + "0.", 0) == 0 && !c.shared_weights) block += c.weights;
  m.parameters = one.parameters + static_cast<int64_t>(block) * (layers - 1);
  m.built_parameters = one.parameters;
  return m;
}

TrainingWork training_work(const Scenario& scenario, std::vector<LayerCost> layers) {
  TrainingWork work;
  work.layers = scenario.compute.attention == Attention::Flash ? fused_attention(std::move(layers)) : std::move(layers);
  if (scenario.compute.activation_checkpointing) {
    const std::string blocks = fsdp_unit_pattern(scenario);
    for (LayerCost& l : work.layers) l.recomputed = !fsdp_unit(l.name, blocks).empty();
  }
  // A VHL step runs its virtual batch (as large as the real one) through the model too.
  work.batch = scenario.workload.batch_size * (vhl_options(scenario) ? 2 : 1);
  work.optimizer = scenario.optimizer.name;
  work.momentum = scenario.optimizer.momentum > 0;
  if (scenario.replica_group.grouped() && scenario.replica_group.parallelism != GroupParallelism::Ddp)
    work.optimizer_shards = scenario.replica_group.gpus;
  return work;
}

std::vector<ShardSampler> make_samplers(const Scenario& s, const Dataset& data) {
  const auto& p = s.workload.partition;
  std::vector<std::vector<int64_t>> shards;
  // A replica group's GPUs share the group's shard and draw its batches alike, each training on
  // its part of them (training/algorithms/replica_groups.cpp).
  const int replicas = s.replica_group.grouped() ? s.groups() : s.nodes;
  // Whether every node gets data depends on the data set, so this is where a setup that
  // cannot run shows; it is reported like any other bad scenario value.
  try {
    if (p.kind == PartitionKind::Iid) {
      shards = iid_partition(data.train_size(), replicas, stream_seed(s.seed, "partition"));
    } else {
      auto g = data.train_groups.contiguous();
      std::vector<int64_t> groups(g.data_ptr<int64_t>(), g.data_ptr<int64_t>() + g.numel());
      shards = p.kind == PartitionKind::Dirichlet
                   ? dirichlet_partition(groups, data.num_groups, replicas, p.alpha, stream_seed(s.seed, "partition"))
                   : category_partition(groups, data.num_groups, replicas);
    }
  } catch (const std::invalid_argument& e) {
    throw scenario_error(s, p.kind == PartitionKind::Iid ? "nodes" : "workload.partition", e.what());
  }
  std::vector<ShardSampler> samplers;
  const int gpus = s.nodes / replicas;
  for (int n = 0; n < s.nodes; ++n) {
    const int replica = n / gpus;
    samplers.emplace_back(shards[replica], stream_seed(s.seed, "batches", replica));
  }
  return samplers;
}

std::unique_ptr<Algorithm> make_algorithm(const Scenario& scenario, std::vector<int64_t> shard_sizes,
                                          std::vector<std::vector<int64_t>> tensor_shapes,
                                          std::vector<std::vector<int>> neighbours, std::vector<int> tensor_layers,
                                          std::vector<SecondOrderLayer> second_order, int64_t cut_values_per_sample,
                                          const std::vector<std::string>& tensor_names, MergeTimes merge_times) {
  const AlgorithmEntry* entry = find_algorithm(scenario.algorithm.name);
  if (!entry) throw std::invalid_argument("unknown algorithm '" + scenario.algorithm.name + "'");
  if (!entry->make)
    throw std::invalid_argument(scenario.algorithm.name +
                                " runs as a server and clients (sim/core/run.h: make_run), not on the engine");
  AlgorithmSettings settings;
  // A scenario built in code may name an algorithm without setting its options: its defaults.
  const bool own = scenario.algorithm.options.index() == entry->defaults.index();
  settings.options = own ? scenario.algorithm.options : entry->defaults;
  settings.nodes = scenario.nodes;
  settings.batch_size = scenario.workload.batch_size;
  settings.steps = scenario.workload.steps;
  settings.seed = scenario.seed;
  settings.neighbours = std::move(neighbours);
  settings.shard_sizes = std::move(shard_sizes);
  for (const auto& shape : tensor_shapes) {
    int64_t n = 1;
    for (int64_t side : shape) n *= side;
    settings.tensor_sizes.push_back(n);
  }
  settings.tensor_shapes = std::move(tensor_shapes);
  settings.tensor_layers = std::move(tensor_layers);
  settings.optimizer = optimizer_config(scenario);
  settings.second_order = std::move(second_order);
  settings.cut_values_per_sample = cut_values_per_sample;
  settings.merge_times = std::move(merge_times);
  if (!scenario.replica_group.grouped()) return entry->make(settings);
  // Replica groups: the algorithm runs over the groups, the wrapper over the GPUs.
  settings.group_gpus = scenario.replica_group.gpus;
  settings.group_parallelism = enum_name(scenario.replica_group.parallelism);
  settings.group_wire_bytes =
      scenario.compute.dtype == Precision::Bf16 || scenario.compute.dtype == Precision::Fp16 ? 2 : 4;
  settings.group_reduce_bytes =
      scenario.replica_group.reduce_dtype == ReduceDtype::Fp32 ? 4 : settings.group_wire_bytes;
  if (scenario.replica_group.parallelism == GroupParallelism::Fsdp)
    settings.group_units = fsdp_unit_indices(tensor_names, settings.tensor_layers, fsdp_unit_pattern(scenario));
  // The algorithm across groups, once for each member rank of a group (docs/replica_groups.md):
  // node g is group g, its shard the group's.
  AlgorithmSettings groups = settings;
  const int gpus = scenario.replica_group.gpus;
  groups.nodes = scenario.groups();
  groups.shard_sizes.clear();
  for (int g = 0; g < groups.nodes; ++g)
    groups.shard_sizes.push_back(settings.shard_sizes.at(static_cast<size_t>(g * gpus)));
  groups.neighbours.resize(static_cast<size_t>(groups.nodes));
  // DDP across groups all-reduces the group's gradient once the group has reduced it: one
  // all-reduce (buckets would all leave at once).
  if (auto* ddp = std::get_if<DdpOptions>(&groups.options)) ddp->overlap = false;
  std::vector<std::unique_ptr<Algorithm>> across;
  for (int r = 0; r < gpus; ++r) across.push_back(entry->make(groups));
  return make_replica_groups(std::move(across), settings);
}

}  // namespace testbed
