// The typed scenario: every key a YAML scenario may hold, with its default and its check.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "comm/collective_options.h"
#include "sim/config/choices.h"
#include "sim/config/field_types.h"
#include "sim/config/model_sections.h"
#include "topologies/builders.h"
#include "training/algorithms/registry.h"

namespace testbed {

// Each section lists its keys once in fields(); the same list drives reading,
// checking and writing the resolved scenario back out.
struct LinkSection {
  Bandwidth bandwidth{100e6};
  Duration latency{0.0};
  Fraction loss{0.0};
  // gilbert_elliott: burst loss, `loss` in the good state (see topologies/link_spec.h).
  LossModel loss_model = LossModel::Bernoulli;
  Fraction p_good_bad{0};
  Fraction p_bad_good{0.5};
  Fraction loss_bad{1};
  // Bandwidth over time: a CSV of `time_s,bandwidth` rows (relative: to the scenario file;
  // sim/config/bandwidth_trace.h), ns3 only.
  std::string trace = {};
  Duration jitter{0.0};  // extra per-packet delay, uniform in [0, jitter] (ns3 only)
  template <class V>
  void fields(V& v) {
    v.field("bandwidth", bandwidth, Range{0, 1e15, true});
    v.field("latency", latency, Range{0, 3600});
    v.field("loss", loss, Range{0, 1, false, true});
    v.field("loss_model", loss_model);
    v.field("p_good_bad", p_good_bad, Range{0, 1});
    v.field("p_bad_good", p_bad_good, Range{0, 1, true});
    v.field("loss_bad", loss_bad, Range{0, 1});
    v.field("trace", trace);
    v.field("jitter", jitter, Range{0, 3600});
  }
  bool operator==(const LinkSection&) const = default;
};

struct LinkOverrideSection {
  std::vector<int> between;                    // two vertex indices
  std::optional<Bandwidth> bandwidth;          // between[0] -> between[1], and back unless:
  std::optional<Bandwidth> bandwidth_reverse;  // between[1] -> between[0]
  std::optional<Duration> latency;
  std::optional<Fraction> loss;
  std::optional<LossModel> loss_model;
  std::optional<Fraction> p_good_bad, p_bad_good, loss_bad;
  std::optional<std::string> trace;  // as LinkSection::trace, for this link
  std::optional<Duration> jitter;
  template <class V>
  void fields(V& v) {
    v.field("between", between);
    v.field("bandwidth", bandwidth, Range{0, 1e15, true});
    v.field("bandwidth_reverse", bandwidth_reverse, Range{0, 1e15, true});
    v.field("latency", latency, Range{0, 3600});
    v.field("loss", loss, Range{0, 1, false, true});
    v.field("loss_model", loss_model);
    v.field("p_good_bad", p_good_bad, Range{0, 1});
    v.field("p_bad_good", p_bad_good, Range{0, 1, true});
    v.field("loss_bad", loss_bad, Range{0, 1});
    v.field("trace", trace);
    v.field("jitter", jitter, Range{0, 3600});
  }
};

struct TopologySection {
  TopologyKind kind = TopologyKind::Ring;
  LinkSection link;
  std::vector<LinkOverrideSection> links;
  int rows = 0;         // torus2d: grid rows (0: most square)
  int k = 4;            // fat_tree: switch radix (even)
  int clusters = 2;     // hierarchical: number of clusters
  int per_cluster = 0;  // hierarchical: hosts per cluster (0: nodes / clusters)
  LinkSection wan{.bandwidth = Bandwidth{1e9}, .latency = Duration{0.050}};  // hierarchical: the WAN ring
  double p = 0.5;                                                            // erdos_renyi: link probability
  int degree = 4;                                                            // watts_strogatz: lattice degree (even)
  double beta = 0.1;                                                         // watts_strogatz: rewiring probability
  std::string file;                    // graphml: Topology Zoo file (relative: to the scenario file)
  std::vector<std::string> placement;  // graphml: node ids or labels of the hosts
  int gpus_per_host = 4;               // gpu_hosts: GPUs a host (nodes are GPUs, host h has g h .. g h + g - 1)
  // gpu_hosts: each GPU's link to its host's switch, by preset (per direction: nvlink3 300 GB/s,
  // nvlink4 450 GB/s, pcie3 16 GB/s, pcie4 32 GB/s, pcie5 64 GB/s), or `custom`: gpu_link.
  std::string interconnect = "nvlink3";
  LinkSection gpu_link{.bandwidth = Bandwidth{2.4e12}, .latency = Duration{1e-6}};
  template <class V>
  void fields(V& v) {
    v.field("kind", kind);
    v.field("link", link);
    v.field("links", links);
    v.field("rows", rows, Range{0, 1e6});
    v.field("k", k, Range{2, 1e4});
    v.field("clusters", clusters, Range{1, 1e5});
    v.field("per_cluster", per_cluster, Range{0, 1e5});
    v.field("wan", wan);
    v.field("p", p, Range{0, 1, true});
    v.field("degree", degree, Range{2, 1e5});
    v.field("beta", beta, Range{0, 1});
    v.field("file", file);
    v.field("placement", placement);
    v.field("gpus_per_host", gpus_per_host, Range{1, 1e4});
    v.field("interconnect", interconnect, Choices{{"nvlink3", "nvlink4", "pcie3", "pcie4", "pcie5", "custom"}});
    v.field("gpu_link", gpu_link);
  }
};

// An outage over an interval: `link: [a, b]` (vertex indices) or `node: n` is cut from
// down[0] to down[1] (ns3 only).
struct FaultSection {
  std::vector<int> link;
  std::optional<int> node;
  std::vector<Duration> down;
  template <class V>
  void fields(V& v) {
    v.field("link", link);
    v.field("node", node);
    v.field("down", down);
  }
};

// Cross-traffic sharing the links (ns3 only; netmodels/ns3/ns3_options.h BackgroundFlow): from
// vertex `from` to vertex `to` (hosts are 0..nodes-1; switches may send and receive too),
// bulk (TCP) or onoff (UDP at `rate` during `on`, silent during `off`, off first), from
// `start` to `stop`.
struct BackgroundSection {
  std::optional<int> from, to;
  BackgroundKind kind = BackgroundKind::Bulk;
  std::optional<Bandwidth> rate;
  Duration on{1}, off{1};
  Duration start{0};
  std::optional<Duration> stop;
  template <class V>
  void fields(V& v) {
    v.field("from", from, Range{0, 1e9});
    v.field("to", to, Range{0, 1e9});
    v.field("kind", kind);
    v.field("rate", rate, Range{0, 1e15, true});
    v.field("on", on, Range{0, 1e6, true});
    v.field("off", off, Range{0, 1e6});
    v.field("start", start, Range{0, 1e9});
    v.field("stop", stop, Range{0, 1e9});
  }
};

struct NetworkSection {
  Backend backend = Backend::Ns3;
  FlowSharingRule flow_sharing = FlowSharingRule::MaxMin;
  Transport transport = Transport::Tcp;
  int mtu = 9000;
  std::string queue = "1.5bdp";      // device queue: `<x>bdp` of each link direction, or bytes (256KB)
  std::optional<int> queue_packets;  // device queue in packets instead of `queue`
  Duration min_rto{0.2};
  bool delayed_ack = false;  // ns-3's delayed ACK traps its TCP after a tail loss (ns3_network.cpp)
  Duration syn_timeout{1.0};
  TcpVariant tcp = TcpVariant::NewReno;  // congestion control (ns3_tcp.h)
  bool slow_start_after_idle = true;     // Linux's default
  bool memoize = true;                   // replay identical collectives from a held network (ns3)
  // Flow backend, projection: time a whole-fleet ring all-reduce in closed form on its
  // connections when they have the network to themselves (comm/ring_lanes.h);
  // false sends every message as a flow, for the same times at far higher cost.
  bool flow_lanes = true;
  // Which minimum-hop path each connection takes, in every backend (topologies/routing.h):
  // shortest (lowest-index ties) or ecmp (a seeded hash of the connection picks one).
  RoutingPolicy routing = RoutingPolicy::Shortest;
  std::vector<FaultSection> faults;
  std::vector<BackgroundSection> background;
  template <class V>
  void fields(V& v) {
    v.field("backend", backend);
    v.field("flow_sharing", flow_sharing);
    v.field("transport", transport);
    v.field("mtu", mtu, Range{576, 65535});
    v.field("queue", queue);
    v.field("queue_packets", queue_packets, Range{1, 1e7});
    v.field("min_rto", min_rto, Range{1e-6, 60});
    v.field("delayed_ack", delayed_ack);
    v.field("syn_timeout", syn_timeout, Range{1e-6, 600, true});
    v.field("tcp", tcp);
    v.field("slow_start_after_idle", slow_start_after_idle);
    v.field("memoize", memoize);
    v.field("flow_lanes", flow_lanes);
    v.field("routing", routing);
    v.field("faults", faults);
    v.field("background", background);
  }
};

// How collectives are expanded into messages (comm/plans/collectives.h). `clusters` lists node
// indices per cluster for the hierarchical algorithm; empty takes the topology's clusters
// (hierarchical: its clusters; fat_tree: its pods).
struct CollectiveSection {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  int slices = 1;  // ring pipelining: messages per chunk (README, Collectives: why 1)
  int server = 0;  // parameter_server: the server's node index
  std::vector<std::vector<int>> clusters;
  // The collective library (comm/library_presets.h; docs/network.md#library-presets) and its
  // transports: between machines, and between GPUs of one gpu_hosts host (unset: p2p over
  // NVLink, and over PCIe where the device has PCIe peer-to-peer; shm otherwise). none: the
  // network's time alone (line rate, link latency). Unset: what PyTorch uses on the device,
  // NCCL on a GPU preset, Gloo with compute.device cpu (none under fedavg); collective_library().
  std::optional<CollectiveLibrary> library;
  // Unset: ib for NCCL, Horovod and MPI where the machines' links are 100 Gb/s or faster (the
  // RDMA NICs such clusters have), socket otherwise and always for Gloo; network_transport().
  std::optional<NetworkTransport> transport;
  std::optional<LocalTransport> local_transport;
  // Each of the preset's figures, overridden when set (comm/library_costs.h): the launch per
  // collective and rank; per message at each end; the share of the route's rate a message
  // reaches and a cap on it; the network transport's, and the local_ ones inside a host.
  std::optional<Duration> launch_latency;
  std::optional<Duration> message_latency, local_message_latency;
  std::optional<double> bandwidth_share, local_bandwidth_share;
  std::optional<Bandwidth> max_rate, local_max_rate;
  // horovod: its fusion buffer (HOROVOD_FUSION_THRESHOLD, MiB) and cycle (HOROVOD_CYCLE_TIME);
  // the defaults are Horovod's since v0.21.0 (64 MiB and 5 ms before).
  double fusion_mb = 128;
  Duration cycle_time{1e-3};
  template <class V>
  void fields(V& v) {
    v.field("algorithm", algorithm);
    v.field("slices", slices, Range{1, 1 << 20});
    v.field("server", server, Range{0, 1e5});
    v.field("clusters", clusters);
    v.field("library", library);
    v.field("transport", transport);
    v.field("local_transport", local_transport);
    v.field("launch_latency", launch_latency, Range{0, 10});
    v.field("message_latency", message_latency, Range{0, 10});
    v.field("bandwidth_share", bandwidth_share, Range{0, 1, true});
    v.field("max_rate", max_rate, Range{0, 1e15, true});
    v.field("local_message_latency", local_message_latency, Range{0, 10});
    v.field("local_bandwidth_share", local_bandwidth_share, Range{0, 1, true});
    v.field("local_max_rate", local_max_rate, Range{0, 1e15, true});
    v.field("fusion_mb", fusion_mb, Range{0, 1e6});
    v.field("cycle_time", cycle_time, Range{0, 10, true});
  }
};

struct WorkloadSection {
  std::string model = "cnn";
  std::string dataset = "fashion_mnist";
  std::string data_dir;  // default: the dataset's install location
  int batch_size = 64;
  int steps = 300;
  int eval_every = 50;
  int eval_samples = 0;  // 0: the whole test split
  Partition partition;
  std::vector<std::string> shifts;  // extra shifted test sets (images): noise rotation invert
  GptSection gpt;
  LlamaSection llama;
  BertSection bert;
  SyntheticSection synthetic;
  AdapterSection adapter;
  std::vector<int> classes;     // keep only these labels (train and test); empty: all
  std::string init = "shared";  // shared | independent: every replica its own seed-derived initialisation
  std::string init_from;        // checkpoint every replica starts from
  int correlation_pairs = 0;    // replica pairs sampled for the correlation (0: all)
  // false: a projection (docs/projection.md): no replica is trained; every op is sized from the
  // model's shapes and every step timed by the compute model, so times, bytes and messages are a
  // training run's, with no loss or accuracy.
  bool train = true;
  template <class V>
  void fields(V& v) {
    v.field("model", model,
            Choices{{"mlp", "cnn", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "densenet201",
                     "inception_v4", "vit_b_16", "gpt", "llama", "bert"}});
    v.field("dataset", dataset, Choices{{"fashion_mnist", "brown", "synthetic", "imagenet_synthetic", "brown_genres"}});
    v.field("data_dir", data_dir);
    v.field("batch_size", batch_size, Range{1, 1e6});
    v.field("steps", steps, Range{1, 1e9});
    v.field("eval_every", eval_every, Range{1, 1e9});
    v.field("eval_samples", eval_samples, Range{0, 1e9});
    v.field("partition", partition);
    v.field("shifts", shifts);
    v.field("gpt", gpt);
    v.field("llama", llama);
    v.field("bert", bert);
    v.field("synthetic", synthetic);
    v.field("adapter", adapter);
    v.field("classes", classes);
    v.field("init", init, Choices{{"shared", "independent"}});
    v.field("init_from", init_from);
    v.field("correlation_pairs", correlation_pairs, Range{0, 1e9});
    v.field("train", train);
  }
};

struct OptimizerSection {
  OptimizerKind name = OptimizerKind::AdamW;
  double lr = 1e-3;
  double weight_decay = 0.01;
  double momentum = 0.0;  // sgd
  double beta1 = 0.9, beta2 = 0.999;
  // The second-order ones, SGD (with `momentum`) on preconditioned gradients, with their
  // references' keys and defaults: eva (lzhangbv/eva; training/optimizers/eva.h), kfac and
  // dp_kfac (lzhangbv/kfac_pytorch; training/optimizers/kfac.h).
  std::optional<double> damping;  // unset: eva 0.03, kfac and dp_kfac 0.001
  double kl_clip = 0.001;         // 0: eva re-scales to the gradient's norm; kfac does not clip
  double factor_decay = 0.95;
  int kfac_batch_size = 16;                       // eva
  KfacVariant variant = KfacVariant::Inverse;     // kfac
  int fac_update_freq = 1, kfac_update_freq = 1;  // kfac, dp_kfac
  bool second_order() const { return testbed::second_order(name); }
  // Whether the algorithm averages the gradient every step, so that a second-order optimizer's
  // own messages travel beside it (training/optimizers/second_order_sync.h); elsewhere K-FAC and
  // Eva precondition alone on each node.
  static bool sends_second_order_messages(const std::string& algorithm) {
    return algorithm == "ddp" || algorithm == "dear";
  }
  double damping_or_default() const { return damping.value_or(name == OptimizerKind::Eva ? 0.03 : 0.001); }
  template <class V>
  void fields(V& v) {
    v.field("name", name);
    v.field("lr", lr, Range{0, 1e3, true});
    v.field("weight_decay", weight_decay, Range{0, 1e3});
    v.field("momentum", momentum, Range{0, 1, false, true});
    v.field("beta1", beta1, Range{0, 1, false, true});
    v.field("beta2", beta2, Range{0, 1, false, true});
    v.field("damping", damping, Range{0, 1e6, true});
    v.field("kl_clip", kl_clip, Range{0, 1e6});
    v.field("factor_decay", factor_decay, Range{0, 1});
    v.field("kfac_batch_size", kfac_batch_size, Range{1, 1e6});
    v.field("variant", variant);
    v.field("fac_update_freq", fac_update_freq, Range{1, 1e6});
    v.field("kfac_update_freq", kfac_update_freq, Range{1, 1e6});
  }
};

// `name` picks an algorithm from training/algorithms/registry.cpp; the other keys belong to
// some algorithms each (the registry lists which), and unset ones take the algorithm's default.
struct AlgorithmSection {
  std::string name = "ddp";
  AlgorithmOptions options;  // the keys of `name`'s registry entry (training/algorithms/*_options.h)
  template <class V>
  void fields(V& v) {
    v.field("name", name, Choices{algorithm_names()});
    // Once the name is read, its own keys (with their defaults) are the ones to read or write.
    const AlgorithmEntry* entry = find_algorithm(name);
    if (entry && options.index() != entry->defaults.index()) options = entry->defaults;
    std::visit([&v](auto& o) { o.fields(v); }, options);
  }
  // For the strict reader: a key the chosen algorithm does not take.
  std::string unknown_key_message(const std::string& key, const std::vector<std::string>& known) const {
    std::vector<std::string> keys(known.begin() + 1, known.end());  // all but `name`
    std::string list;
    for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
    return "'" + key + "' is not a key of algorithm '" + name + "'" +
           (keys.empty() ? " (it takes none)" : " (its keys: " + list + ")");
  }
};

struct ComputeSection {
  ComputeKind model = ComputeKind::Flops;
  // profile: a CSV of measured per-layer times (sim/config/layer_profile.h), split within a row
  // by the roofline of compute.device.
  std::string file;
  Duration step_time{0.1};  // fixed: seconds per step
  std::string device = "rtx4090";
  Precision dtype = Precision::Fp32;  // flops: the training precision; picks the preset's peak and bytes per element
  FlopRate peak_flops{0};             // overrides the device preset when > 0 (e.g. 312TFLOPS)
  ByteRate memory_bandwidth{0};       // overrides the preset when > 0 (e.g. 3.35TB/s)
  std::optional<Duration> launch_latency;  // per kernel; overrides the preset when set
  // flops: the calibrated efficiencies of the device preset (sim/core/compute/device_efficiency.h),
  // each overridable; `mfu` instead puts every GEMM and convolution at that share of the peak
  // and memory passes at the full bandwidth (the flat model).
  std::optional<double> mfu;
  std::optional<double> gemm_efficiency, convolution_efficiency, memory_efficiency;
  double measured_scale = 1.0;  // measured: host seconds x scale (not deterministic)
  // Heterogeneous fleets: node n runs 1/speed[n] as long (list shorter than nodes: cycled),
  // or speeds drawn uniformly from [speed_min, speed_max] by seed when the list is empty.
  std::vector<double> speeds;
  double speed_min = 1, speed_max = 1;
  double straggler_sigma = 0;  // each step x lognormal(0, sigma), seeded per node and step
  // flops: what a GPU holds against the device's memory (sim/config/device_memory.h): a run
  // over it is refused (error), said on stderr (warn: for what the testbed does not model,
  // such as offload to host memory), or not checked (off).
  MemoryCheck memory_check = MemoryCheck::Error;
  // flops: attention as eager PyTorch runs it (its T x T scores written, read and kept) or as
  // FlashAttention does (one fused kernel, no scores in memory, recomputed in backward).
  Attention attention = Attention::Eager;
  // flops: how activations are laid out, PyTorch's default NCHW or channels_last (NHWC), which
  // tensor-core convolutions take as they are; under nchw each transposes in and out.
  MemoryFormat memory_format = MemoryFormat::Nchw;
  // flops: activation checkpointing of the model's blocks (its transformer blocks or ResNet
  // stages, as FSDP's default units): a block keeps only its input for backward, and its
  // forward runs again before its backward.
  bool activation_checkpointing = false;
  // Compute beside communication (docs/compute.md#overlap-slowdown): the passes from a step's
  // first op that leaves before backward ends (a DDP bucket) to backward's end take
  // 1 + overlap_slowdown as long, the communication's kernels and copies taking SMs and
  // memory bandwidth from them. Fixed by the op schedule. 0: no slowdown. Unset: the chosen
  // collective library's measured figure (overlap_slowdown()).
  std::optional<double> overlap_slowdown;
  template <class V>
  void fields(V& v) {
    v.field("model", model);
    v.field("file", file);
    v.field("step_time", step_time, Range{0, 1e6});
    v.field("device", device, Choices{device_presets()});
    v.field("dtype", dtype);
    v.field("peak_flops", peak_flops, Range{0, 1e20});
    v.field("memory_bandwidth", memory_bandwidth, Range{0, 1e18});
    v.field("launch_latency", launch_latency, Range{0, 1});
    v.field("mfu", mfu, Range{0, 1, true});
    v.field("gemm_efficiency", gemm_efficiency, Range{0, 1, true});
    v.field("convolution_efficiency", convolution_efficiency, Range{0, 1, true});
    v.field("memory_efficiency", memory_efficiency, Range{0, 1, true});
    v.field("measured_scale", measured_scale, Range{0, 1e6, true});
    v.field("speeds", speeds);
    v.field("speed_min", speed_min, Range{0, 1e6, true});
    v.field("speed_max", speed_max, Range{0, 1e6, true});
    v.field("straggler_sigma", straggler_sigma, Range{0, 10});
    v.field("memory_check", memory_check);
    v.field("attention", attention);
    v.field("memory_format", memory_format);
    v.field("activation_checkpointing", activation_checkpointing);
    v.field("overlap_slowdown", overlap_slowdown, Range{0, 10});
  }
  static std::vector<std::string> device_presets();
  // The models that time a step on compute.device's roof (profile splits its rows by it).
  bool reads_device() const { return model == ComputeKind::Flops || model == ComputeKind::Profile; }
};

// Replicas larger than one GPU (docs/replica_groups.md): the algorithm's nodes become groups of
// `gpus` consecutive nodes (GPUs of a gpu_hosts topology: a group is one host or several), which
// train one replica together with `parallelism` inside the group: ddp (a whole replica on each
// GPU, gradients all-reduced), zero1 (optimizer state sharded: gradients reduce-scattered,
// updated parameters all-gathered), zero2 (gradients sharded too; the same messages). The
// algorithm runs across the groups, each GPU exchanging its own slice with the same slice of
// the other groups (G rings in parallel). fsdp (ZeRO-3) shards the parameters too, by `unit`
// (training/algorithms/fsdp_units.h; "": the model's blocks or stages): each unit all-gathered
// before its forward and its backward, its gradient reduce-scattered after. gpus 1: no groups,
// every node a replica.
struct ReplicaGroupSection {
  int gpus = 1;
  GroupParallelism parallelism = GroupParallelism::Ddp;
  std::string unit;
  // zero1, zero2, fsdp: gradients reduced in the parameters' dtype (FSDP's default) or in fp32
  // (MixedPrecisionPolicy's reduce_dtype=float32, as INTELLECT-1's code sets it).
  ReduceDtype reduce_dtype = ReduceDtype::Param;
  bool grouped() const { return gpus > 1; }
  template <class V>
  void fields(V& v) {
    v.field("gpus", gpus, Range{1, 1e5});
    v.field("parallelism", parallelism);
    v.field("unit", unit);
    v.field("reduce_dtype", reduce_dtype);
  }
};

struct OutputSection {
  std::string path;        // default: results/<name>.h5
  std::string checkpoint;  // where to save the averaged model at the end (empty: nowhere)
  int resume_every = 0;    // steps between resume checkpoints in <path>.resume/ (0: none)
  template <class V>
  void fields(V& v) {
    v.field("path", path);
    v.field("checkpoint", checkpoint);
    v.field("resume_every", resume_every, Range{0, 1e9});
  }
};

struct Scenario {
  std::string name = "scenario";
  uint64_t seed = 0;
  int nodes = 4;
  std::string device = "cpu";  // torch device for training
  int threads = 0;             // LibTorch intra-op threads; 0: all cores
  // portable: the same bits on every x86-64 machine with AVX2 (training/numerics.h);
  // native: the machine's fastest kernels, whose bits follow the CPU and the environment.
  std::string numerics = "portable";
  TopologySection topology;
  NetworkSection network;
  CollectiveSection collective;
  WorkloadSection workload;
  OptimizerSection optimizer;
  AlgorithmSection algorithm;
  ReplicaGroupSection replica_group;
  ComputeSection compute;
  OutputSection output;
  // The algorithm's nodes: the groups (nodes / replica_group.gpus), or the nodes themselves.
  int groups() const { return nodes / std::max(1, replica_group.gpus); }
  template <class V>
  void fields(V& v) {
    v.field("name", name, FileName{});
    v.field("seed", seed);
    v.field("nodes", nodes, Range{1, 1e5});
    v.field("device", device);
    v.field("threads", threads, Range{0, 1024});
    v.field("numerics", numerics, Choices{{"portable", "native"}});
    v.field("topology", topology);
    v.field("network", network);
    v.field("collective", collective);
    v.field("workload", workload);
    v.field("optimizer", optimizer);
    v.field("algorithm", algorithm);
    v.field("replica_group", replica_group);
    v.field("compute", compute);
    v.field("output", output);
  }

  // Where each key that was given came from ("file:line:col" or "--set k=v:1:col"), so
  // checks that need more than the file (the data set, the partition) can point at it.
  std::string source;
  std::map<std::string, std::string> locations;
  std::vector<std::string> warnings;  // "file:line:col: warning: ..." (scenario_rules.h), printed by the CLI
  std::string where(const std::string& key) const {
    auto it = locations.find(key);
    return it != locations.end() ? it->second : source + ":1:1";
  }
};

// FSDP's unit pattern: replica_group.unit, or the model's blocks or stages when it is empty
// ("" when the model has none: training/algorithms/fsdp_units.h).
std::string fsdp_unit_pattern(const Scenario& scenario);

// The topology a scenario describes, as the builders take it.
TopologySpec topology_spec(const Scenario& scenario);

// Hosts per cluster of a hierarchical topology as the scenario asks for them (a federated run's
// clients per cluster): topology.per_cluster, else nodes / clusters when that divides, else 0;
// 0 for any other kind.
int clients_per_cluster(const Scenario& scenario);

// Each node's cluster for the hierarchical collective: collective.clusters when given, else
// the hierarchical topology's clusters or the fat-tree's pods; empty when there are none.
// The collective library's costs as the scenario sets them: its preset's figures for the
// chosen transports, each override applied, and each gpu_hosts GPU's machine.
LibraryCosts library_costs(const Scenario& scenario);
// collective.library, or when unset the one PyTorch would use: NCCL on a GPU device preset,
// Gloo with compute.device cpu; none for fedavg, whose server and clients send models directly.
CollectiveLibrary collective_library(const Scenario& scenario);
// collective.transport, or when unset: InfiniBand or RoCE verbs for NCCL, Horovod and MPI on
// links of 100 Gb/s and faster, TCP sockets otherwise (PyTorch's Gloo has only TCP).
NetworkTransport network_transport(const Scenario& scenario);
// compute.overlap_slowdown, or when unset the chosen library's preset figure (0 on one node:
// nothing communicates beside its backward).
double overlap_slowdown(const Scenario& scenario);
// Between GPUs of one host: collective.local_transport, or when unset p2p over NVLink and over
// PCIe where compute.device has PCIe peer-to-peer, shm otherwise.
LocalTransport local_transport(const Scenario& scenario);
std::vector<int> node_clusters(const Scenario& scenario);
// A split model's cloud (algorithm.cloud): the flops model on that device at the scenario's
// precision, efficiencies and memory format; none of the fleet's own settings (speeds,
// stragglers, overrides of compute.device's peak, bandwidth or launch latency).
ComputeSection split_cloud_compute(const Scenario& scenario);
// The `collective:` section as the plain choices comm/ builds each op's plan with.
CollectiveChoice collective_choice(const Scenario& scenario);

// network.queue read: a multiple of each link's bandwidth-delay product, or bytes; neither
// when it cannot be read (the loader rejects that scenario).
struct QueueSize {
  std::optional<double> bdp, bytes;
};
QueueSize parse_queue(const std::string& queue);

}  // namespace testbed
