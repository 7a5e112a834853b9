// FedAvg with a server (McMahan et al. 2017, Algorithm 1; the server step of FedAvgM):
// re-implemented here round by round from the global model and compared with the federated
// run; who sends what to whom, and which late clients a deadline drops.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <torch/torch.h>

#include "sim/config/workload.h"
#include "sim/core/federated/client_devices.h"
#include "sim/core/federated/federated_run.h"
#include "sim/output/hdf5_recorder.h"
#include "tests/support/reference_scenario.h"
#include "training/data/partition.h"
#include "training/seed_streams.h"

namespace testbed {
namespace {

constexpr int64_t kD = 3300;  // the reference MLP's parameters

// Label-skewed shards (Dirichlet 0.5), so that the clients' weights differ.
Scenario fed_scenario(int clients, int steps, const std::string& algorithm, const std::vector<std::string>& sets = {}) {
  Scenario s = reference_scenario(7, clients, steps, "{kind: star, link: {bandwidth: 1Gbps, latency: 1ms}}",
                                  "{name: sgd, lr: 0.05, momentum: 0.9}", algorithm, sets);
  s.workload.partition.kind = PartitionKind::Dirichlet;
  s.workload.partition.alpha = 0.5;
  return s;
}

struct FedRun {
  torch::Tensor global;
  std::vector<int64_t> batches;
  MemoryRecorder record;
  RunSummary summary;
};

FedRun run_federated(const Scenario& s, const Dataset& data) {
  FedRun r;
  FederatedRun run(s, data);
  r.summary = run.run(r.record);
  EXPECT_EQ(r.summary.status, testbed::RunStatus::Completed) << r.summary.error;
  r.global = run.global().clone();
  for (int c = 0; c < s.nodes; ++c) r.batches.push_back(run.batches_drawn(c));
  return r;
}

// The round's clients: the first m of the seeded permutation the scenario names (an input
// here, as the picks of every algorithm that samples).
std::vector<int> picked(const Scenario& s, int round, int m) {
  auto order = seeded_permutation(s.nodes, stream_seed(s.seed, "fedavg_clients", static_cast<uint64_t>(round)));
  std::vector<int> chosen(order.begin(), order.begin() + m);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

// McMahan et al.'s rounds: each picked client starts from the global model with a fresh
// optimizer, runs H steps on its own shard (its batches carry on from its last round), and
// the server takes x - lr m, m = mu m + (x - sum_k n_k w_k / sum_k n_k), in float64.
struct Reference {
  Reference(const Scenario& s, const Dataset& data)
      : s(s),
        data(data),
        samplers(make_samplers(s, data)),
        global(flatten_parameters(*make_model(s)).clone()),
        momentum(torch::zeros({global.numel()}, torch::kFloat64)) {}

  void round(const std::vector<int>& clients, int H, double lr, double mu, const std::set<int>& dropped = {}) {
    round(
        clients, [H](int) { return H; }, lr, mu, dropped);
  }
  // steps(c): client c's local steps this round.
  void round(const std::vector<int>& clients, const std::function<int(int)>& steps, double lr, double mu,
             const std::set<int>& dropped = {}) {
    torch::NoGradGuard no_grad;
    auto sum = torch::zeros({global.numel()}, torch::kFloat64);
    double total = 0;
    for (int c : clients) {
      Replica rep(make_model(s), optimizer_config(s), samplers[c], torch::kCPU, data.task);
      load_flat_parameters(rep.model(), global);
      for (int h = 0; h < steps(c); ++h) {
        torch::GradMode::set_enabled(true);
        rep.forward_backward(rep.next_batch(data, s.workload.batch_size));
        rep.optimizer_step();
      }
      samplers[c] = rep.sampler();
      if (dropped.count(c)) continue;
      const double n = static_cast<double>(samplers[c].shard_size());
      sum += flatten_parameters(rep.model()).to(torch::kFloat64) * n;
      total += n;
    }
    if (total == 0) return;
    const auto x = global.to(torch::kFloat64);
    momentum = momentum * mu + (x - sum / total);
    global = (x - momentum * lr).to(torch::kFloat32);
  }

  const Scenario& s;
  const Dataset& data;
  std::vector<ShardSampler> samplers;
  torch::Tensor global, momentum;
};

class FedAvg : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { data_ = new Dataset(load_dataset(fed_scenario(5, 10, "{name: fedavg}"))); }
  static void TearDownTestSuite() { delete data_; }
  static Dataset* data_;
};
Dataset* FedAvg::data_ = nullptr;

TEST_F(FedAvg, OneRoundIsTheWeightedMeanOfThePickedClientsTrainedFromTheGlobalModel) {
  const Scenario s = fed_scenario(5, 3, "{name: fedavg, H: 3, clients_per_round: 2}");
  Reference ref(s, *data_);
  std::set<int64_t> shards;
  for (const auto& sampler : ref.samplers) shards.insert(sampler.shard_size());
  ASSERT_EQ(shards.size(), 5u) << "unequal shards make the weights matter";
  const auto chosen = picked(s, 0, 2);
  ref.round(chosen, 3, 1.0, 0.0);
  const FedRun r = run_federated(s, *data_);
  EXPECT_LT((r.global - ref.global).abs().max().item<double>(), 1e-7);
  EXPECT_GT((r.global - flatten_parameters(*make_model(s))).abs().max().item<double>(), 1e-3);
  // The three others never drew a batch; the two drew H each.
  for (int c = 0; c < 5; ++c) {
    const bool in = std::count(chosen.begin(), chosen.end(), c) > 0;
    EXPECT_EQ(r.batches[c], in ? 3 : 0) << "client " << c;
  }
  // Messages: the model (4 d bytes) from the server (host 5, after the clients') to each picked
  // client and back; nothing to or from the others.
  ASSERT_EQ(r.record.messages.size(), 4u);
  int downloads = 0, uploads = 0;
  for (const auto& m : r.record.messages) {
    EXPECT_EQ(m.bytes, static_cast<uint64_t>(4 * kD));
    const int client = m.kind == "download" ? m.dst : m.src;
    EXPECT_EQ(m.kind == "download" ? m.src : m.dst, 5);
    EXPECT_TRUE(std::count(chosen.begin(), chosen.end(), client) > 0) << "client " << client;
    downloads += m.kind == "download";
    uploads += m.kind == "upload";
  }
  EXPECT_EQ(downloads, 2);
  EXPECT_EQ(uploads, 2);
  EXPECT_EQ(r.summary.total_bytes, static_cast<uint64_t>(2 * 2 * 4 * kD));
  // A participation row per picked client with its weight; a /train row per round, a column
  // per picked client.
  ASSERT_EQ(r.record.participation_rows.size(), 2u);
  for (const auto& p : r.record.participation_rows) {
    EXPECT_EQ(p.samples, ref.samplers[p.client].shard_size());
    EXPECT_FALSE(p.dropped);
    EXPECT_LT(p.t_download, p.t_compute);
    EXPECT_LT(p.t_compute, p.t_upload);
  }
  ASSERT_EQ(r.record.train_rows.size(), 1u);
  EXPECT_EQ(r.record.train_rows[0].loss.size(), 2u);
}

TEST_F(FedAvg, RoundsWithServerMomentumFollowTheReference) {
  // Four rounds of two of five clients (fraction 0.4), FedAvgM's server step (lr 0.7, mu 0.9).
  const Scenario s = fed_scenario(5, 12, "{name: fedavg, H: 3, fraction: 0.4, server_lr: 0.7, server_momentum: 0.9}");
  Reference ref(s, *data_);
  std::vector<int> times_picked(5, 0);
  for (int round = 0; round < 4; ++round) {
    const auto chosen = picked(s, round, 2);
    for (int c : chosen) ++times_picked[c];
    ref.round(chosen, 3, 0.7, 0.9);
  }
  // The draw has a client picked twice: its batches carry on from its last round.
  EXPECT_GT(*std::max_element(times_picked.begin(), times_picked.end()), 1);
  const FedRun r = run_federated(s, *data_);
  EXPECT_LT((r.global - ref.global).abs().max().item<double>(), 1e-6);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(r.batches[c], 3 * times_picked[c]) << "client " << c;
  EXPECT_EQ(r.record.train_rows.size(), 4u);
  EXPECT_EQ(r.summary.total_bytes, static_cast<uint64_t>(4 * 2 * 2 * 4 * kD));
}

TEST_F(FedAvg, TheDeadlineDropsExactlyTheLateClients) {
  // All five clients, two local steps of a fixed second at speeds 1, 0.25, 1, 1, 0.2: 2 s, 8 s,
  // 2 s, 2 s and 10 s of compute against a 5 s deadline (the messages take milliseconds).
  const std::vector<double> speeds = {1, 0.25, 1, 1, 0.2};
  const double deadline = 5;
  const Scenario s = fed_scenario(5, 2, "{name: fedavg, H: 2, clients_per_round: 5, deadline: 5s}",
                                  {"compute={model: fixed, step_time: 1s, speeds: [1, 0.25, 1, 1, 0.2]}"});
  std::set<int> late;
  for (int c = 0; c < 5; ++c)
    if (2 * 1.0 / speeds[c] > deadline) late.insert(c);
  ASSERT_EQ(late, (std::set<int>{1, 4}));
  Reference ref(s, *data_);
  ref.round({0, 1, 2, 3, 4}, 2, 1.0, 0.0, late);
  const FedRun r = run_federated(s, *data_);
  EXPECT_LT((r.global - ref.global).abs().max().item<double>(), 1e-7);
  // The round ends at the deadline; the late uploads still arrive, after it, unapplied.
  EXPECT_NEAR(r.summary.projected_time_s, deadline, 1e-12);
  ASSERT_EQ(r.record.participation_rows.size(), 5u);
  for (const auto& p : r.record.participation_rows) {
    EXPECT_EQ(p.dropped, late.count(p.client) > 0) << "client " << p.client;
    EXPECT_EQ(p.t_upload > deadline, late.count(p.client) > 0) << "client " << p.client;
  }
  ASSERT_EQ(r.record.round_rows.size(), 1u);
  EXPECT_EQ(r.record.round_rows[0].applied, 3);
  EXPECT_EQ(r.record.round_rows[0].dropped, 2);
  EXPECT_NEAR(r.record.round_rows[0].t_end, deadline, 1e-12);
}

TEST_F(FedAvg, LocalEpochsRunEpochsOfEachShard) {
  // McMahan et al.'s E epochs: client k runs ceil(E n_k / B) steps, so the shards' sizes set
  // both the weights and the local work. Two rounds of three of five clients, E = 1.5, B = 32.
  const Scenario s = fed_scenario(5, 20, "{name: fedavg, H: 10, clients_per_round: 3, local_epochs: 1.5}");
  Reference ref(s, *data_);
  auto steps = [&](int c) { return static_cast<int>(std::ceil(1.5 * ref.samplers[c].shard_size() / 32.0)); };
  std::vector<int64_t> drawn(5, 0);
  for (int round = 0; round < 2; ++round) {
    const auto chosen = picked(s, round, 3);
    for (int c : chosen) drawn[c] += steps(c);
    ref.round(chosen, steps, 1.0, 0.0);
  }
  std::set<int> distinct;
  for (int c = 0; c < 5; ++c) distinct.insert(steps(c));
  ASSERT_GT(distinct.size(), 2u) << "unequal shards make unequal local work";
  const FedRun r = run_federated(s, *data_);
  EXPECT_LT((r.global - ref.global).abs().max().item<double>(), 1e-6);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(r.batches[c], drawn[c]) << "client " << c;
  for (const auto& p : r.record.participation_rows) {
    EXPECT_EQ(p.steps, steps(p.client));
    // A fixed 10 ms a step: the client's compute is its steps.
    EXPECT_NEAR(p.t_compute - p.t_start, 0.01 * p.steps, 1e-12);
  }
}

TEST(ClientDevices, SequentialDealsBalancedTakesTheLargestFirst) {
  // Work 3, 1, 4, 1, 5, 9, 2, 6 on three devices. Sequential: k mod 3. Balanced (LPT): 9 -> 0,
  // 6 -> 1, 5 -> 2, 4 -> 2 (5 < 6), 3 -> 1 (6 < 9), 2 -> 0 (9 = 9 = 9: the lowest), 1 (client 1)
  // -> 1 (11, 9, 9 -> 1), 1 (client 3) -> 2 (11, 10, 9).
  const std::vector<double> work = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_EQ(assign_devices(work, 3, ClientSchedule::Sequential), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(assign_devices(work, 3, ClientSchedule::Balanced), (std::vector<int>{1, 1, 2, 2, 2, 0, 0, 1}));
  EXPECT_EQ(assign_devices(work, 1, ClientSchedule::Balanced), std::vector<int>(8, 0));
}

// Five clients of 2, 8, 2, 8 and 2 s of training (two fixed 1 s steps at speeds 1, 0.25, 1,
// 0.25, 1) on two devices. Sequential deals them out in turn: device 0 gets clients 0, 2, 4
// (6 s), device 1 clients 1 and 3 (16 s). Balanced takes the largest first onto the least
// loaded device: 1 -> 0, 3 -> 1, 0 -> 0, 2 -> 1, 4 -> 0 (12 s and 10 s). A device takes its
// clients in the order their downloads arrive; a client starts at max(download, device free).
TEST_F(FedAvg, DevicesRunTheirClientsOneAfterAnother) {
  const std::vector<double> work = {2, 8, 2, 8, 2};
  const std::map<std::string, std::vector<int>> device_of = {{"sequential", {0, 1, 0, 1, 0}},
                                                             {"balanced", {0, 0, 1, 1, 0}}};
  auto with = [&](const std::string& devices) {
    return run_federated(fed_scenario(5, 2, "{name: fedavg, H: 2, clients_per_round: 5" + devices + "}",
                                      {"compute={model: fixed, step_time: 1s, speeds: [1, 0.25, 1, 0.25, 1]}"}),
                         *data_);
  };
  const FedRun own = with("");
  for (const auto& p : own.record.participation_rows) {
    EXPECT_EQ(p.device, -1);
    EXPECT_EQ(p.t_start, p.t_download);
  }
  for (const auto& [schedule, devices] : device_of) {
    const FedRun r = with(", devices: 2, schedule: " + schedule);
    EXPECT_TRUE(torch::equal(r.global, own.global)) << schedule << ": where a client trains changes no value";
    auto rows = r.record.participation_rows;
    ASSERT_EQ(rows.size(), 5u);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.t_download < b.t_download; });
    std::vector<double> free(2, 0);
    double busy = 0;
    for (const auto& p : rows) {
      EXPECT_EQ(p.device, devices[p.client]) << schedule << " client " << p.client;
      const double start = std::max(p.t_download, free[devices[p.client]]);
      EXPECT_NEAR(p.t_start, start, 1e-12) << schedule << " client " << p.client;
      EXPECT_NEAR(p.t_compute, start + work[p.client], 1e-12) << schedule << " client " << p.client;
      free[devices[p.client]] = start + work[p.client];
      busy += work[p.client];
    }
    const double makespan = *std::max_element(free.begin(), free.end());
    EXPECT_NEAR(makespan, schedule == "sequential" ? 16 : 12, 0.01) << schedule;
    ASSERT_EQ(r.record.round_rows.size(), 1u);
    const RoundRow& round = r.record.round_rows[0];
    EXPECT_GT(round.t_end, makespan);  // the last upload's trip
    EXPECT_NEAR(round.utilisation, busy / (2 * round.t_end), 1e-12) << schedule;
  }
  // Each client on its own device: five executors, the slowest client sets the round.
  EXPECT_NEAR(own.record.round_rows[0].utilisation, 22 / (5 * own.record.round_rows[0].t_end), 1e-12);
}

// The file of a federated run: a /train row per round and a column per picked client; the
// eval's per-client columns in the same order, NaN where the client's upload missed the
// deadline; a /participation row per picked client and round.
TEST_F(FedAvg, TheFileHasARowPerRoundAndAColumnPerPickedClient) {
  const Scenario s =
      fed_scenario(5, 4, "{name: fedavg, H: 2, clients_per_round: 5, deadline: 5s}",
                   {"compute={model: fixed, step_time: 1s, speeds: [1, 0.25, 1, 1, 0.2]}", "workload.eval_every=2"});
  const auto path = std::filesystem::temp_directory_path() / ("testbed_fedavg_" + std::to_string(::getpid()) + ".h5");
  {
    FederatedRun run(s, *data_);
    Hdf5Recorder recorder(path.string(), run.run_info());
    ASSERT_EQ(run.run(recorder).status, testbed::RunStatus::Completed);
  }
  H5::H5File file(path.string(), H5F_ACC_RDONLY);
  auto dims = [&](const char* name) {
    H5::DataSpace space = file.openDataSet(name).getSpace();
    std::vector<hsize_t> d(static_cast<size_t>(space.getSimpleExtentNdims()));
    space.getSimpleExtentDims(d.data());
    return d;
  };
  EXPECT_EQ(dims("/train/loss"), (std::vector<hsize_t>{2, 5}));
  EXPECT_EQ(dims("/eval/replica_loss"), (std::vector<hsize_t>{2, 5}));
  EXPECT_EQ(dims("/participation/client"), (std::vector<hsize_t>{10}));
  EXPECT_EQ(dims("/participation/t_start"), (std::vector<hsize_t>{10}));
  EXPECT_EQ(dims("/rounds/utilisation"), (std::vector<hsize_t>{2}));
  std::vector<int64_t> dropped(2);
  file.openDataSet("/rounds/dropped").read(dropped.data(), H5::PredType::NATIVE_INT64);
  EXPECT_EQ(dropped, (std::vector<int64_t>{2, 2}));
  std::vector<int64_t> step(2);
  file.openDataSet("/train/step").read(step.data(), H5::PredType::NATIVE_INT64);
  EXPECT_EQ(step, (std::vector<int64_t>{1, 3}));  // each round's last local step
  std::vector<double> replica_loss(10);
  file.openDataSet("/eval/replica_loss").read(replica_loss.data(), H5::PredType::NATIVE_DOUBLE);
  for (int c = 0; c < 5; ++c) {
    const bool late = c == 1 || c == 4;  // every client is picked: slot c is client c
    EXPECT_EQ(std::isnan(replica_loss[c]), late) << "client " << c;
  }
  std::filesystem::remove(path);
}

// /rounds holds each round's result: the mean local loss of the uploads applied (from
// /participation) and, where the round was evaluated, the server's model's eval loss and
// accuracy (the /eval row of that round). By default every round is evaluated.
TEST_F(FedAvg, EachRoundHasItsLossAndAccuracy) {
  for (const bool every_round : {true, false}) {
    SCOPED_TRACE(every_round ? "default eval_every" : "eval_every 6");
    // reference_scenario gives eval_every; the default (every round) is what a scenario without it gets.
    const Scenario s = fed_scenario(5, 12, "{name: fedavg, H: 2, clients_per_round: 3}",
                                    {every_round ? "workload.eval_every=2" : "workload.eval_every=6"});
    const FedRun r = run_federated(s, *data_);
    ASSERT_EQ(r.record.round_rows.size(), 6u);
    size_t eval = 0;
    for (const RoundRow& round : r.record.round_rows) {
      double loss = 0;
      int applied = 0;
      for (const auto& p : r.record.participation_rows)
        if (p.round == round.round && !p.dropped) loss += p.loss, ++applied;
      ASSERT_EQ(applied, 3);
      EXPECT_DOUBLE_EQ(round.train_loss, loss / applied) << "round " << round.round;
      const bool evaluated = every_round || (round.round + 1) % 3 == 0;  // steps 6 and 12
      EXPECT_EQ(std::isfinite(round.accuracy), evaluated) << "round " << round.round;
      if (!evaluated) continue;
      ASSERT_LT(eval, r.record.eval_rows.size());
      EXPECT_EQ(r.record.eval_rows[eval].step, (round.round + 1) * 2);
      EXPECT_EQ(round.accuracy, r.record.eval_rows[eval].accuracy);
      EXPECT_EQ(round.eval_loss, r.record.eval_rows[eval].loss);
      ++eval;
    }
    EXPECT_EQ(eval, r.record.eval_rows.size());
  }
  // Without eval_every in the scenario, a federated run evaluates where each round ends.
  EXPECT_EQ(parse_scenario("algorithm: {name: fedavg, H: 4}\nworkload: {steps: 40}\n", "s.yaml").workload.eval_every,
            4);
}

// Two clusters of three clients on a hierarchical topology: hosts 0-2 are cluster 0's clients and
// 3 its aggregator, 4-6 and 7 cluster 1's, 8 the server (in cluster 0). The model crosses the
// WAN once each way per cluster; the server's average of the two aggregates (each the float32
// mean of its clients weighted by samples, with its weight) is the flat average up to that
// rounding.
TEST_F(FedAvg, ClustersAggregateLocallyThenGlobally) {
  Scenario s = fed_scenario(6, 2, "{name: fedavg, H: 2, clients_per_round: 6}",
                            {"topology={kind: hierarchical, clusters: 2, link: {bandwidth: 1Gbps, latency: 1ms}, "
                             "wan: {bandwidth: 100Mbps, latency: 20ms}}"});
  const Dataset data = load_dataset(s);
  Reference ref(s, data);
  ref.round({0, 1, 2, 3, 4, 5}, 2, 1.0, 0.0);
  const FedRun r = run_federated(s, data);
  EXPECT_LT((r.global - ref.global).abs().max().item<double>(), 1e-6);
  EXPECT_GT((r.global - flatten_parameters(*make_model(s))).abs().max().item<double>(), 1e-3);
  const std::vector<int> client_host = {0, 1, 2, 4, 5, 6};
  const int server = 8;
  auto aggregator = [](int host) { return host < 4 ? 3 : 7; };
  std::map<std::pair<int, int>, const MessageRecord*> sent;  // (src, dst) -> message
  for (const auto& m : r.record.messages) sent[{m.src, m.dst}] = &m;
  auto message = [&](int src, int dst) -> const MessageRecord& {
    auto it = sent.find({src, dst});
    if (it == sent.end()) throw std::runtime_error("no message " + std::to_string(src) + " -> " + std::to_string(dst));
    return *it->second;
  };
  ASSERT_EQ(r.record.messages.size(), 2u + 6 + 6 + 2);
  for (int a : {3, 7}) {
    EXPECT_EQ(message(server, a).kind, "download");
    EXPECT_EQ(message(a, server).kind, "aggregate");
    EXPECT_EQ(message(a, server).bytes, static_cast<uint64_t>(4 * kD + 8));
    // It passes the model on once it has it, and sends its aggregate once its last client is in.
    double last = 0;
    for (int h : client_host) {
      if (aggregator(h) != a) continue;
      EXPECT_NEAR(message(a, h).t_send, message(server, a).t_recv, 1e-12) << "host " << h;
      EXPECT_EQ(message(h, a).kind, "upload");
      last = std::max(last, message(h, a).t_recv);
    }
    EXPECT_NEAR(message(a, server).t_send, last, 1e-12);
  }
  EXPECT_NEAR(r.summary.projected_time_s, std::max(message(3, server).t_recv, message(7, server).t_recv), 1e-12);
  EXPECT_EQ(r.summary.total_bytes, static_cast<uint64_t>(2 * 4 * kD + 6 * 4 * kD * 2 + 2 * (4 * kD + 8)));
}

// Stateful clients keep their optimizer (SGD momentum here) from one round they are picked for to
// the next: the reference keeps one replica per client and loads the global model into it.
TEST_F(FedAvg, StatefulClientsKeepTheirOptimizerBetweenRounds) {
  auto scenario = [](const char* state) {
    return fed_scenario(5, 12, std::string("{name: fedavg, H: 3, fraction: 0.4, client_state: ") + state + "}");
  };
  const Scenario s = scenario("memory");
  auto samplers = make_samplers(s, *data_);
  std::vector<std::unique_ptr<Replica>> clients;
  for (int c = 0; c < 5; ++c)
    clients.push_back(
        std::make_unique<Replica>(make_model(s), optimizer_config(s), samplers[c], torch::kCPU, data_->task));
  auto global = flatten_parameters(*make_model(s)).clone();
  std::vector<int> times_picked(5, 0);
  for (int round = 0; round < 4; ++round) {
    torch::NoGradGuard no_grad;
    auto sum = torch::zeros({global.numel()}, torch::kFloat64);
    double total = 0;
    for (int c : picked(s, round, 2)) {
      ++times_picked[c];
      Replica& rep = *clients[c];
      load_flat_parameters(rep.model(), global);
      for (int h = 0; h < 3; ++h) {
        torch::GradMode::set_enabled(true);
        rep.forward_backward(rep.next_batch(*data_, s.workload.batch_size));
        rep.optimizer_step();
      }
      const double n = static_cast<double>(rep.sampler().shard_size());
      sum += flatten_parameters(rep.model()).to(torch::kFloat64) * n;
      total += n;
    }
    global = (sum / total).to(torch::kFloat32);
  }
  ASSERT_GT(*std::max_element(times_picked.begin(), times_picked.end()), 1) << "a client must come back";
  const FedRun memory = run_federated(s, *data_);
  EXPECT_LT((memory.global - global).abs().max().item<double>(), 1e-6);
  const FedRun disk = run_federated(scenario("disk"), *data_);
  EXPECT_TRUE(torch::equal(disk.global, memory.global));
  const FedRun stateless = run_federated(scenario("none"), *data_);
  EXPECT_GT((stateless.global - memory.global).abs().max().item<double>(), 1e-4);
}

// A switch as the server (in-network aggregation's place): on a star of 1 Gbps, 1 ms links the
// switch (vertex 6, after the five clients and the spare host 5) is one link from every client,
// so on the alpha-beta network a download takes 1 ms + 4d bytes at 1 Gbps, against a host
// server's two links of latency (the route's latencies plus bytes at its bottleneck); the model
// is the same.
TEST_F(FedAvg, ASwitchServesOneLinkFromEveryClient) {
  auto with = [&](const std::string& server, const char* backend) {
    return run_federated(fed_scenario(5, 2, "{name: fedavg, H: 2, clients_per_round: 5" + server + "}",
                                      {std::string("network={backend: ") + backend + "}"}),
                         *data_);
  };
  const double transfer = 4.0 * kD * 8 / 1e9, one_link = 1e-3 + transfer;
  const FedRun host = with("", "analytical"), sw = with(", server: 6", "analytical");
  EXPECT_TRUE(torch::equal(host.global, sw.global));
  for (const auto& m : sw.record.messages) {
    EXPECT_EQ(m.kind == "download" ? m.src : m.dst, 6);
    EXPECT_NEAR(m.t_recv - m.t_send, one_link, 1e-12) << m.kind;
  }
  for (const auto& m : host.record.messages) EXPECT_NEAR(m.t_recv - m.t_send, 2e-3 + transfer, 1e-12) << m.kind;
  // The packet-level and flow backends carry a switch's messages too.
  for (const char* backend : {"ns3", "flow"}) {
    const FedRun r = with(", server: 6", backend);
    EXPECT_TRUE(torch::equal(r.global, host.global)) << backend;
    ASSERT_EQ(r.record.messages.size(), 10u) << backend;
    for (const auto& m : r.record.messages) EXPECT_GT(m.t_recv - m.t_send, one_link) << backend;
  }
}

}  // namespace
}  // namespace testbed
