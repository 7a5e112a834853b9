// The scenario's closed choices that the code branches on, as enums the strict reader reads by
// name (training/algorithms/option_fields.h: EnumNames) and writes back by the same names.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "comm/library_presets.h"
#include "comm/plans/collectives.h"
#include "netmodels/ns3_choices.h"
#include "sim/config/device_presets.h"
#include "topologies/builders.h"
#include "topologies/routing.h"
#include "training/algorithms/option_fields.h"
#include "training/models/adapter_kind.h"
#include "training/optimizers/optimizer_kind.h"

namespace testbed {

// Which model carries the messages (docs/network.md#backends): ns-3's packets, max-min flows,
// or the alpha-beta bound.
enum class Backend { Ns3, Flow, Analytical };

template <>
struct EnumNames<Backend> {
  static const std::vector<std::pair<Backend, std::string>>& all() {
    static const std::vector<std::pair<Backend, std::string>> names = {
        {Backend::Ns3, "ns3"}, {Backend::Flow, "flow"}, {Backend::Analytical, "analytical"}};
    return names;
  }
};

// The flow backend's sharing rule: every flow alike (max-min), or weighted by 1/RTT as TCP's
// throughput is (netmodels/flow_network.h).
enum class FlowSharingRule { MaxMin, Rtt };

template <>
struct EnumNames<FlowSharingRule> {
  static const std::vector<std::pair<FlowSharingRule, std::string>>& all() {
    static const std::vector<std::pair<FlowSharingRule, std::string>> names = {{FlowSharingRule::MaxMin, "maxmin"},
                                                                               {FlowSharingRule::Rtt, "rtt"}};
    return names;
  }
};

// How messages travel on ns-3 (netmodels/ns3_choices.h).
template <>
struct EnumNames<Transport> {
  static const std::vector<std::pair<Transport, std::string>>& all() {
    static const std::vector<std::pair<Transport, std::string>> names = {{Transport::Tcp, "tcp"},
                                                                         {Transport::Udp, "udp"}};
    return names;
  }
};

// The collective libraries and their transports (comm/library_presets.h).
template <>
struct EnumNames<CollectiveLibrary> {
  static const std::vector<std::pair<CollectiveLibrary, std::string>>& all() {
    static const std::vector<std::pair<CollectiveLibrary, std::string>> names = {
        {CollectiveLibrary::None, "none"},
        {CollectiveLibrary::Nccl, "nccl"},
        {CollectiveLibrary::Gloo, "gloo"},
        {CollectiveLibrary::Mpi, "mpi"},
        {CollectiveLibrary::Horovod, "horovod"}};
    return names;
  }
};

template <>
struct EnumNames<NetworkTransport> {
  static const std::vector<std::pair<NetworkTransport, std::string>>& all() {
    static const std::vector<std::pair<NetworkTransport, std::string>> names = {{NetworkTransport::Socket, "socket"},
                                                                                {NetworkTransport::Ib, "ib"}};
    return names;
  }
};

template <>
struct EnumNames<LocalTransport> {
  static const std::vector<std::pair<LocalTransport, std::string>>& all() {
    static const std::vector<std::pair<LocalTransport, std::string>> names = {{LocalTransport::P2p, "p2p"},
                                                                              {LocalTransport::Shm, "shm"}};
    return names;
  }
};

// The collective algorithms by their scenario names (comm/plans/collectives.h lists them).
template <>
struct EnumNames<CollectiveAlgorithm> {
  static const std::vector<std::pair<CollectiveAlgorithm, std::string>>& all() {
    static const std::vector<std::pair<CollectiveAlgorithm, std::string>> names = [] {
      std::vector<std::pair<CollectiveAlgorithm, std::string>> out;
      for (const std::string& name : collective_algorithm_names()) out.emplace_back(collective_algorithm(name), name);
      return out;
    }();
    return names;
  }
};

// How a step's compute time is known (docs/compute.md): a fixed time, the roofline of the
// model's FLOPs and bytes on a device, a GPU's measured layer times, or this host's time scaled.
enum class ComputeKind { Fixed, Flops, Profile, Measured };

template <>
struct EnumNames<ComputeKind> {
  static const std::vector<std::pair<ComputeKind, std::string>>& all() {
    static const std::vector<std::pair<ComputeKind, std::string>> names = {{ComputeKind::Fixed, "fixed"},
                                                                           {ComputeKind::Flops, "flops"},
                                                                           {ComputeKind::Profile, "profile"},
                                                                           {ComputeKind::Measured, "measured"}};
    return names;
  }
};

// How a replica group splits its replica over its GPUs (docs/replica_groups.md): each holds it
// whole (ddp), the optimizer state sharded (zero1), the gradients too (zero2), or everything (fsdp).
enum class GroupParallelism { Ddp, Zero1, Zero2, Fsdp };

template <>
struct EnumNames<GroupParallelism> {
  static const std::vector<std::pair<GroupParallelism, std::string>>& all() {
    static const std::vector<std::pair<GroupParallelism, std::string>> names = {{GroupParallelism::Ddp, "ddp"},
                                                                                {GroupParallelism::Zero1, "zero1"},
                                                                                {GroupParallelism::Zero2, "zero2"},
                                                                                {GroupParallelism::Fsdp, "fsdp"}};
    return names;
  }
};

// What a GPU holds against its device's memory (sim/config/device_memory.h): a run over it is
// refused, said on stderr (for what the testbed does not model, such as offload to host memory),
// or not checked.
enum class MemoryCheck { Error, Warn, Off };

template <>
struct EnumNames<MemoryCheck> {
  static const std::vector<std::pair<MemoryCheck, std::string>>& all() {
    static const std::vector<std::pair<MemoryCheck, std::string>> names = {
        {MemoryCheck::Error, "error"}, {MemoryCheck::Warn, "warn"}, {MemoryCheck::Off, "off"}};
    return names;
  }
};

// Attention as eager PyTorch runs it (its T x T scores written, read and kept), or as
// FlashAttention does (one fused kernel, no scores in memory, recomputed in backward).
enum class Attention { Eager, Flash };

template <>
struct EnumNames<Attention> {
  static const std::vector<std::pair<Attention, std::string>>& all() {
    static const std::vector<std::pair<Attention, std::string>> names = {{Attention::Eager, "eager"},
                                                                         {Attention::Flash, "flash"}};
    return names;
  }
};

// How activations are laid out: PyTorch's default NCHW, or channels_last (NHWC), which
// tensor-core convolutions take as they are; under nchw each transposes in and out.
enum class MemoryFormat { Nchw, ChannelsLast };

template <>
struct EnumNames<MemoryFormat> {
  static const std::vector<std::pair<MemoryFormat, std::string>>& all() {
    static const std::vector<std::pair<MemoryFormat, std::string>> names = {
        {MemoryFormat::Nchw, "nchw"}, {MemoryFormat::ChannelsLast, "channels_last"}};
    return names;
  }
};

// TCP's congestion control and cross-traffic (netmodels/ns3_choices.h).
template <>
struct EnumNames<TcpVariant> {
  static const std::vector<std::pair<TcpVariant, std::string>>& all() {
    static const std::vector<std::pair<TcpVariant, std::string>> names = {{TcpVariant::NewReno, "newreno"},
                                                                          {TcpVariant::Cubic, "cubic"},
                                                                          {TcpVariant::Bbr, "bbr"},
                                                                          {TcpVariant::Dctcp, "dctcp"}};
    return names;
  }
};

template <>
struct EnumNames<BackgroundKind> {
  static const std::vector<std::pair<BackgroundKind, std::string>>& all() {
    static const std::vector<std::pair<BackgroundKind, std::string>> names = {{BackgroundKind::Bulk, "bulk"},
                                                                              {BackgroundKind::OnOff, "onoff"}};
    return names;
  }
};

// The topology kinds by the names topologies/builders.h gives them.
template <>
struct EnumNames<TopologyKind> {
  static const std::vector<std::pair<TopologyKind, std::string>>& all() {
    static const std::vector<std::pair<TopologyKind, std::string>> names = [] {
      std::vector<std::pair<TopologyKind, std::string>> out;
      for (const std::string& name : topology_kinds()) out.emplace_back(topology_kind(name), name);
      return out;
    }();
    return names;
  }
};

// Which minimum-hop path a connection takes (topologies/routing.h).
template <>
struct EnumNames<RoutingPolicy> {
  static const std::vector<std::pair<RoutingPolicy, std::string>>& all() {
    static const std::vector<std::pair<RoutingPolicy, std::string>> names = {
        {RoutingPolicy::Shortest, routing_name(RoutingPolicy::Shortest)},
        {RoutingPolicy::Ecmp, routing_name(RoutingPolicy::Ecmp)}};
    return names;
  }
};

// A link's losses: independent per packet (Bernoulli), or in bursts of a two-state Markov chain
// (Gilbert-Elliott; topologies/link_spec.h).
enum class LossModel { Bernoulli, GilbertElliott };

template <>
struct EnumNames<LossModel> {
  static const std::vector<std::pair<LossModel, std::string>>& all() {
    static const std::vector<std::pair<LossModel, std::string>> names = {
        {LossModel::Bernoulli, "bernoulli"}, {LossModel::GilbertElliott, "gilbert_elliott"}};
    return names;
  }
};

// The training precisions (sim/config/device_presets.h).
template <>
struct EnumNames<Precision> {
  static const std::vector<std::pair<Precision, std::string>>& all() {
    static const std::vector<std::pair<Precision, std::string>> names = {
        {Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"}};
    return names;
  }
};

// What a replica group's gradient reduce-scatters carry: the parameters' precision, or fp32
// (FSDP's MixedPrecisionPolicy reduce_dtype).
enum class ReduceDtype { Param, Fp32 };

template <>
struct EnumNames<ReduceDtype> {
  static const std::vector<std::pair<ReduceDtype, std::string>>& all() {
    static const std::vector<std::pair<ReduceDtype, std::string>> names = {{ReduceDtype::Param, "param"},
                                                                           {ReduceDtype::Fp32, "fp32"}};
    return names;
  }
};

// The optimizers and K-FAC's variants (training/optimizers/optimizer_kind.h).
template <>
struct EnumNames<OptimizerKind> {
  static const std::vector<std::pair<OptimizerKind, std::string>>& all() {
    static const std::vector<std::pair<OptimizerKind, std::string>> names = {
        {OptimizerKind::AdamW, "adamw"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::Sgd, "sgd"},
        {OptimizerKind::Eva, "eva"},     {OptimizerKind::Kfac, "kfac"}, {OptimizerKind::DpKfac, "dp_kfac"}};
    return names;
  }
};

template <>
struct EnumNames<KfacVariant> {
  static const std::vector<std::pair<KfacVariant, std::string>>& all() {
    static const std::vector<std::pair<KfacVariant, std::string>> names = {{KfacVariant::Inverse, "inverse"},
                                                                           {KfacVariant::Eigen, "eigen"}};
    return names;
  }
};

// A model's low-rank adapters (training/models/adapter_kind.h).
template <>
struct EnumNames<AdapterKind> {
  static const std::vector<std::pair<AdapterKind, std::string>>& all() {
    static const std::vector<std::pair<AdapterKind, std::string>> names = {
        {AdapterKind::None, "none"}, {AdapterKind::Lora, "lora"}, {AdapterKind::LoraFa, "lora_fa"}};
    return names;
  }
};

}  // namespace testbed
