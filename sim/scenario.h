// The typed scenario: every key a YAML scenario may hold, with its default and its check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "topologies/builders.h"

namespace testbed {

// Unit-carrying doubles, so the YAML reader knows how to parse each field.
struct Bandwidth { double bps = 0; };
struct Duration { double s = 0; };
struct Fraction { double value = 0; };

// Checks a field's value; the reader reports a violation at the field's position.
struct Range {
  double lo = -1e300, hi = 1e300;
  bool lo_open = false, hi_open = false;
};
struct Choices {
  std::vector<std::string> allowed;
};

// Each section lists its keys once in fields(); the same list drives reading,
// checking and writing the resolved scenario back out.
struct LinkSection {
  Bandwidth bandwidth{100e6};
  Duration latency{0.0};
  Fraction loss{0.0};
  template <class V> void fields(V& v) {
    v.field("bandwidth", bandwidth, Range{0, 1e15, true});
    v.field("latency", latency, Range{0, 3600});
    v.field("loss", loss, Range{0, 1, false, true});
  }
};

struct LinkOverrideSection {
  std::vector<int> between;  // two vertex indices
  std::optional<Bandwidth> bandwidth;
  std::optional<Duration> latency;
  std::optional<Fraction> loss;
  template <class V> void fields(V& v) {
    v.field("between", between);
    v.field("bandwidth", bandwidth, Range{0, 1e15, true});
    v.field("latency", latency, Range{0, 3600});
    v.field("loss", loss, Range{0, 1, false, true});
  }
};

struct TopologySection {
  std::string kind = "ring";
  LinkSection link;
  std::vector<LinkOverrideSection> links;
  int rows = 0;  // torus2d: grid rows (0: most square)
  template <class V> void fields(V& v) {
    v.field("kind", kind, Choices{topology_kinds()});
    v.field("link", link);
    v.field("links", links);
    v.field("rows", rows, Range{0, 1e6});
  }
};

struct NetworkSection {
  std::string backend = "ns3";
  std::string transport = "tcp";
  int mtu = 9000;
  int queue_packets = 1000;
  Duration min_rto{0.2};
  template <class V> void fields(V& v) {
    v.field("backend", backend, Choices{{"ns3"}});
    v.field("transport", transport, Choices{{"tcp"}});
    v.field("mtu", mtu, Range{576, 65535});
    v.field("queue_packets", queue_packets, Range{1, 1e7});
    v.field("min_rto", min_rto, Range{1e-6, 60});
  }
};

struct WorkloadSection {
  std::string model = "cnn";
  std::string dataset = "fashion_mnist";
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int batch_size = 64;
  int steps = 300;
  int eval_every = 50;
  int eval_samples = 0;  // 0: the whole test split
  std::string partition = "iid";
  template <class V> void fields(V& v) {
    v.field("model", model, Choices{{"mlp", "cnn"}});
    v.field("dataset", dataset, Choices{{"fashion_mnist"}});
    v.field("data_dir", data_dir);
    v.field("batch_size", batch_size, Range{1, 1e6});
    v.field("steps", steps, Range{1, 1e9});
    v.field("eval_every", eval_every, Range{1, 1e9});
    v.field("eval_samples", eval_samples, Range{0, 1e9});
    v.field("partition", partition, Choices{{"iid"}});
  }
};

struct OptimizerSection {
  std::string name = "adamw";
  double lr = 1e-3;
  double weight_decay = 0.01;
  double momentum = 0.0;  // sgd
  double beta1 = 0.9, beta2 = 0.999;
  template <class V> void fields(V& v) {
    v.field("name", name, Choices{{"adamw", "adam", "sgd"}});
    v.field("lr", lr, Range{0, 1e3, true});
    v.field("weight_decay", weight_decay, Range{0, 1e3});
    v.field("momentum", momentum, Range{0, 1, false, true});
    v.field("beta1", beta1, Range{0, 1, false, true});
    v.field("beta2", beta2, Range{0, 1, false, true});
  }
};

struct AlgorithmSection {
  std::string name = "ddp";
  template <class V> void fields(V& v) { v.field("name", name, Choices{{"ddp"}}); }
};

struct ComputeSection {
  std::string model = "flops";   // fixed | flops
  Duration step_time{0.1};       // fixed: seconds per step
  std::string device = "rtx4090";
  double peak_flops = 0;         // overrides the device preset when > 0
  double mfu = 0.4;
  template <class V> void fields(V& v) {
    v.field("model", model, Choices{{"fixed", "flops"}});
    v.field("step_time", step_time, Range{0, 1e6});
    v.field("device", device, Choices{device_presets()});
    v.field("peak_flops", peak_flops, Range{0, 1e20});
    v.field("mfu", mfu, Range{0, 1, true});
  }
  static std::vector<std::string> device_presets();
};

struct OutputSection {
  std::string path;  // default: results/<name>.h5
  template <class V> void fields(V& v) { v.field("path", path); }
};

struct Scenario {
  std::string name = "scenario";
  uint64_t seed = 0;
  int nodes = 4;
  std::string device = "cpu";  // torch device for training
  int threads = 0;             // LibTorch intra-op threads; 0: all cores
  TopologySection topology;
  NetworkSection network;
  WorkloadSection workload;
  OptimizerSection optimizer;
  AlgorithmSection algorithm;
  ComputeSection compute;
  OutputSection output;
  template <class V> void fields(V& v) {
    v.field("name", name);
    v.field("seed", seed);
    v.field("nodes", nodes, Range{1, 1e5});
    v.field("device", device);
    v.field("threads", threads, Range{0, 1024});
    v.field("topology", topology);
    v.field("network", network);
    v.field("workload", workload);
    v.field("optimizer", optimizer);
    v.field("algorithm", algorithm);
    v.field("compute", compute);
    v.field("output", output);
  }
};

// The topology a scenario describes, as the builders take it.
TopologySpec topology_spec(const Scenario& scenario);

}  // namespace testbed
