// Training over network.transport udp: a neighbour exchange applies what arrived (worked out
// here element by element), masked averages by hand, and collectives untouched (still TCP).
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include <torch/torch.h>

#include "sim/config/scenario_loader.h"
#include "sim/config/workload.h"
#include "sim/core/engine/engine.h"
#include "sim/output/hdf5_recorder.h"
#include "tests/support/engine_run.h"
#include "training/algorithms/sparse_exchange.h"

namespace testbed {
namespace udp_training {  // its own names: algorithm_tests compiles as one unity file
namespace {

constexpr int64_t kD = kMlpParameters;

Scenario scenario(const std::string& algorithm, const std::string& network, double loss, int steps = 1,
                  const std::string& init = "shared") {
  return parse_scenario(R"(
name: udp
seed: 11
nodes: 2
threads: 1
topology: {kind: line, link: {bandwidth: 1Gbps, latency: 1ms, loss: )" +
                            std::to_string(loss) + R"(}}
network: )" + network + R"(
workload: {model: mlp, batch_size: 16, steps: )" +
                            std::to_string(steps) + R"(, eval_every: 1000, eval_samples: 200, init: )" + init + R"(}
optimizer: {name: sgd, lr: 0.05, weight_decay: 0}
compute: {model: fixed, step_time: 10ms}
algorithm: )" + algorithm + "\n",
                        "udp");
}

class UdpTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(scenario("{name: ddp}", "{}", 0))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;

  using Run = EngineRun;
  static Run run(const Scenario& s) { return run_engine(s, *data_); }
};
Dataset* UdpTraining::data_ = nullptr;

// (c) SPARTA, ring exchange, p = 0.5 with the windows selection: after step 0 the chosen
// elements are [0, k), k = round(0.5 d). Two nodes on one link with 10 % packet loss, MTU 576:
// each datagram carries (576 - 28) / 4 = 137 floats, so node n's chosen elements fall into
// blocks of 137 that each either arrived (the element is now the mean of both nodes' values)
// or were lost (the element keeps the node's own value). The values before the exchange come
// from the same run with interval 2, which trains step 0 and exchanges nothing. Independent
// initialisations make the two nodes' values differ everywhere, so every element tells.
TEST_F(UdpTraining, SpartaRingOverTenPercentLossAppliesAboutNinetyPercent) {
  const std::string net = "{backend: ns3, transport: udp, mtu: 576}";
  const Run before = run(
      scenario("{name: sparta, p: 0.5, exchange: ring, selection: windows, interval: 2}", net, 0.1, 1, "independent"));
  const Run after =
      run(scenario("{name: sparta, p: 0.5, exchange: ring, selection: windows}", net, 0.1, 1, "independent"));
  const int64_t k = std::llround(0.5 * kD);
  constexpr int64_t per = 137;
  const int64_t blocks = (k + per - 1) / per;
  int64_t arrived_blocks = 0, lost_blocks = 0;
  for (int n = 0; n < 2; ++n) {
    const auto own = before.parameters[n], other = before.parameters[1 - n], now = after.parameters[n];
    const auto mean = (own + other) / 2;
    // Unchosen elements are untouched.
    EXPECT_TRUE(torch::equal(now.slice(0, k), own.slice(0, k))) << "node " << n;
    const auto distinct = ((own - other).abs() > 1e-6).slice(0, 0, k);
    const auto is_mean = ((now - mean).abs() <= 1e-7).slice(0, 0, k);
    const auto is_own = ((now - own).abs() <= 1e-7).slice(0, 0, k);
    EXPECT_TRUE((is_mean | is_own).all().item<bool>()) << "node " << n << ": an element is neither";
    int64_t lost_elements = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t begin = b * per, end = std::min(k, begin + per);
      const auto tell = distinct.slice(0, begin, end);
      ASSERT_GT(tell.sum().item<int64_t>(), 0) << "block " << b << " cannot tell arrived from lost";
      const int64_t means = (is_mean.slice(0, begin, end) & tell).sum().item<int64_t>();
      const int64_t owns = (is_own.slice(0, begin, end) & tell).sum().item<int64_t>();
      // A datagram arrives whole or not at all.
      EXPECT_TRUE(means == 0 || owns == 0) << "node " << n << " block " << b;
      if (means > 0) {
        ++arrived_blocks;
      } else {
        ++lost_blocks;
        lost_elements += end - begin;
      }
    }
    // What the network reported lost is what the replica did not apply.
    uint64_t reported = 0;
    for (const auto& m : after.record.messages)
      if (m.dst == n) reported += m.lost_bytes;
    EXPECT_EQ(reported, static_cast<uint64_t>(lost_elements) * 4) << "node " << n;
  }
  const double applied = static_cast<double>(arrived_blocks) / static_cast<double>(arrived_blocks + lost_blocks);
  const double sigma = std::sqrt(0.1 * 0.9 / static_cast<double>(2 * blocks));  // 1718 datagrams: 0.0072
  std::printf("applied %.4f of %lld datagrams' elements (sigma %.4f)\n", applied, static_cast<long long>(2 * blocks),
              sigma);
  EXPECT_NEAR(applied, 0.9, 4 * sigma);
}

// (e) An all-reduce needs every byte: DDP would ride TCP whatever the transport, so a
// "lossy datagrams" DDP run would silently be a TCP study. udp under it is refused at the key,
// naming what would use it (ScenarioKeys.EveryKeyIsReadOrRefused holds the rule for every key).
TEST_F(UdpTraining, DdpWithTransportUdpIsRefused) {
  for (double loss : {0.0, 0.01}) {
    try {
      scenario("{name: ddp}", "{backend: ns3, transport: udp}", loss, 3);
      ADD_FAILURE() << "udp under ddp loaded, loss " << loss;
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("udp:7:", 0), 0u) << what;  // network.transport's line
      EXPECT_NE(what.find("'network.transport' has no effect with algorithm ddp"), std::string::npos) << what;
      EXPECT_NE(what.find("neighbour exchange"), std::string::npos) << what;
    }
  }
}

// Gossip sends every parameter: two nodes on one link mix half and half (Metropolis weight
// 1 / (1 + 1)). Where the neighbour's datagram was lost the node keeps its own value.
TEST_F(UdpTraining, GossipMixesWhatArrivedAndKeepsItsOwnValueElsewhere) {
  const std::string net = "{backend: ns3, transport: udp}";
  // Step 0 only, no exchange: what each replica holds before gossip mixes (udp would be
  // refused under SPARTA's all-reduce, and there is no datagram to lose anyway).
  const Run before =
      run(scenario("{name: sparta, interval: 2}", "{backend: ns3, transport: tcp}", 0.1, 1, "independent"));
  const Run after = run(scenario("{name: gossip}", net, 0.1, 1, "independent"));
  uint64_t lost = 0;
  for (const auto& m : after.record.messages) lost += m.lost_bytes;
  EXPECT_GT(lost, 0u);
  int64_t kept = 0;
  for (int n = 0; n < 2; ++n) {
    const auto own = before.parameters[n], mean = (own + before.parameters[1 - n]) / 2, now = after.parameters[n];
    const auto is_mean = (now - mean).abs() <= 1e-7, is_own = (now - own).abs() <= 1e-7;
    EXPECT_TRUE((is_mean | is_own).all().item<bool>()) << "node " << n;
    kept += (is_own & ~is_mean).sum().item<int64_t>();
  }
  EXPECT_EQ(static_cast<uint64_t>(kept) * 4, lost);
}

// /summary lost_bytes is the sum of /comm/messages lost_bytes: the HDF5 file of a run against
// the same run (same seed, same losses) collected in memory.
TEST_F(UdpTraining, SummaryLostBytesTotalsTheMessages) {
  const Scenario s = scenario("{name: gossip}", "{backend: ns3, transport: udp}", 0.1, 2);
  const Run memory = run(s);
  uint64_t lost = 0;
  for (const auto& m : memory.record.messages) lost += m.lost_bytes;
  ASSERT_GT(lost, 0u);
  const auto path = std::filesystem::temp_directory_path() / ("udp_summary_" + std::to_string(::getpid()) + ".h5");
  {
    Engine engine(s, *data_);
    Hdf5Recorder recorder(path.string(), engine.run_info());
    EXPECT_EQ(engine.run(recorder).status, testbed::RunStatus::Completed);
  }
  uint64_t recorded = 0;
  H5::H5File(path.string(), H5F_ACC_RDONLY)
      .openGroup("/summary")
      .openAttribute("lost_bytes")
      .read(H5::PredType::NATIVE_UINT64, &recorded);
  std::filesystem::remove(path);
  EXPECT_EQ(recorded, lost);
}

// Masked averages by hand. Node 0 of a triangle (every degree 2) with peers 1 and 2:
// Metropolis weights 1/3 each and 1/3 for itself. Element 0 arrived from both, element 1
// only from peer 2, element 2 from neither.
TEST(MaskedAveraging, LostElementsAverageOverWhatArrived) {
  CommOp op;
  op.kind = CommKind::NeighbourExchange;
  op.buffer = torch::tensor({3.0f, 3.0f, 3.0f});
  op.peers = {1, 2};
  op.received = {torch::tensor({6.0f, 0.0f, 0.0f}), torch::tensor({9.0f, 9.0f, 0.0f})};
  op.received_mask = {torch::tensor({true, false, false}), torch::tensor({true, true, false})};
  const std::vector<std::vector<int>> triangle = {{1, 2}, {0, 2}, {0, 1}};
  const auto mixed = metropolis_mix(triangle, 0, op);
  EXPECT_NEAR(mixed[0].item<float>(), (3 + 6 + 9) / 3.0, 1e-6);
  EXPECT_NEAR(mixed[1].item<float>(), (3 + 9) / 2.0, 1e-6);  // weights 1/3, 1/3 renormalised
  EXPECT_NEAR(mixed[2].item<float>(), 3.0, 1e-6);
  const auto mean = masked_mean(op);
  EXPECT_NEAR(mean[0].item<float>(), 6.0, 1e-6);
  EXPECT_NEAR(mean[1].item<float>(), 6.0, 1e-6);
  EXPECT_NEAR(mean[2].item<float>(), 3.0, 1e-6);
  // Nothing lost: the plain averages.
  op.received_mask.clear();
  op.received = {torch::tensor({6.0f, 0.0f, 0.0f}), torch::tensor({9.0f, 9.0f, 0.0f})};
  EXPECT_NEAR(metropolis_mix(triangle, 0, op)[1].item<float>(), 4.0, 1e-6);
  EXPECT_NEAR(masked_mean(op)[1].item<float>(), 4.0, 1e-6);
}

}  // namespace
}  // namespace udp_training
}  // namespace testbed
