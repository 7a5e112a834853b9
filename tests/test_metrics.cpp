// Replica agreement and evaluation metrics on known inputs.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "training/metrics.h"

namespace testbed {
namespace {

TEST(ReplicaAgreement, IdenticalReplicasCorrelatePerfectly) {
  torch::manual_seed(0);
  auto w = torch::randn({1000});
  auto a = replica_agreement({w, w.clone(), w.clone()});
  EXPECT_NEAR(a.mean_correlation, 1.0, 1e-12);
  EXPECT_NEAR(a.min_correlation, 1.0, 1e-12);
  EXPECT_NEAR(a.mean_distance, 0.0, 1e-12);
}

TEST(ReplicaAgreement, IndependentReplicasAreNearlyUncorrelated) {
  torch::manual_seed(1);
  std::vector<torch::Tensor> replicas;
  for (int i = 0; i < 4; ++i) replicas.push_back(torch::randn({100000}));
  auto a = replica_agreement(replicas);
  EXPECT_NEAR(a.mean_correlation, 0.0, 0.02);
  // Each is ~sqrt(d * (1 - 1/N)) from the mean of N independent unit-variance vectors.
  EXPECT_NEAR(a.mean_distance, std::sqrt(100000 * 0.75), 5.0);
}

TEST(ReplicaAgreement, AnticorrelatedPairHasMinusOne) {
  auto w = torch::arange(10, torch::kFloat32);
  auto a = replica_agreement({w, -w});
  EXPECT_NEAR(a.mean_correlation, -1.0, 1e-12);
}

}  // namespace
}  // namespace testbed
