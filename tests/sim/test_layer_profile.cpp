// compute.model: profile: a measured CSV of per-layer times, its rows matched to the model's
// layers, each row's time split among its layers by the roofline, and what it refuses.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/config/layer_profile.h"
#include "sim/config/scenario_loader.h"
#include "sim/core/compute/compute_model.h"

namespace testbed {
namespace {

namespace fs = std::filesystem;

std::string write_profile(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("testbed_profile_" + name + ".csv");
  std::ofstream(path) << text;
  return path.string();
}

LayerCost layer(const std::string& name, double flops, bool trains) {
  LayerCost c;
  c.name = name;
  c.flops = flops;
  c.trains = trains;
  return c;
}

// Four layers on a roof of 1e12 FLOP/s with free memory and launches: forward FLOPs / 1e12
// (stem 1 ms, block.a 1 ms, block.b 3 ms, loss 0), backward the input gradient of the layers
// after the stem (block.a 1 ms, block.b 3 ms).
TrainingWork four_layers() {
  TrainingWork w;
  w.layers = {layer("stem", 1e9, true), layer("block.a", 1e9, false), layer("block.b", 3e9, false),
              layer("loss", 0, false)};
  w.optimizer = OptimizerKind::Sgd;
  return w;
}

ComputeSection profile_section(const std::string& file) {
  ComputeSection c;
  c.model = ComputeKind::Profile;
  c.file = file;
  c.peak_flops = FlopRate{1e12};
  c.mfu = 1;
  c.memory_bandwidth = ByteRate{1e30};
  c.launch_latency = Duration{0};
  return c;
}

// By hand: "block" (8 ms forward, 12 ms backward) splits 1 : 3 as block.a and block.b's roofline
// passes do; "stem" is one layer (its backward, which the roofline has none of, still its own);
// "*" takes the layer no row names (loss); the optimizer row is the update. Step: 2 + 0.5 + 2 + 3
// + 6 + 9 + 1 + 2 + 4 = 29.5 ms. Slips caught: a row's time given whole to each of its layers,
// the split by count not by the roofline, the "*" row dropped, the optimizer's time ignored.
// A row, a layer or a module holds what its name is a dotted prefix of (one rule for a profile's
// rows and for the layers that own a gradient): "fc1" holds "fc1.weight", never "fc10".
TEST(LayerProfile, NamesOwnByDottedPrefix) {
  EXPECT_TRUE(owns_by_prefix("fc1", "fc1"));
  EXPECT_TRUE(owns_by_prefix("fc1", "fc1.weight"));
  EXPECT_TRUE(owns_by_prefix("layer1.0", "layer1.0.conv1.weight"));
  EXPECT_FALSE(owns_by_prefix("fc1", "fc10.weight"));
  EXPECT_FALSE(owns_by_prefix("fc1.weight", "fc1"));
  EXPECT_FALSE(owns_by_prefix("fc1", "fc"));
}

TEST(LayerProfile, RowsTimeTheirLayersSplitByTheRoofline) {
  const std::string file = write_profile("split",
                                         "# model four, batch 1\nlayer,forward_ms,backward_ms\nstem,2,0.5\n"
                                         "block,8,12\n*,1,2\noptimizer,4,0\n");
  const ComputeModel m(profile_section(file), four_layers(), 2, 0);
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0), 29.5e-3);
  const StepShares& s = m.shares();
  const std::vector<double> forward = {2, 2, 6, 1}, backward = {0.5, 3, 9, 2};
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_DOUBLE_EQ(s.forward[l] * 29.5, forward[l]) << l;
    EXPECT_DOUBLE_EQ(s.backward[l] * 29.5, backward[l]) << l;
  }
  EXPECT_DOUBLE_EQ(s.update * 29.5, 4);
  EXPECT_DOUBLE_EQ(s.backward_done(1) * 29.5, 11 + 3 + 9 + 2);  // block.a's gradient is ready then
}

// A "*" row when every layer has its own row is spread over them all by the roofline (stem 1/5,
// block.a 1/5, block.b 3/5 of its forward); without an optimizer row the update is the
// roofline's (SGD's 12 bytes a parameter: none here).
TEST(LayerProfile, RestRowSpreadsWhenEveryLayerIsNamed) {
  const std::string file =
      write_profile("spread", "layer,forward_ms,backward_ms\nstem,1,0\nblock.a,1,1\nblock.b,1,1\nloss,1,1\n*,5,4\n");
  const ComputeModel m(profile_section(file), four_layers(), 1, 0);
  const double total = 4 + 3 + 5 + 4;
  EXPECT_DOUBLE_EQ(m.step_seconds(0, 0, 0), total * 1e-3);
  EXPECT_DOUBLE_EQ(m.shares().forward[2] * total, 1 + 5 * 3.0 / 5);
  EXPECT_DOUBLE_EQ(m.shares().backward[2] * total, 1 + 4 * 3.0 / 4);  // backward 1 : 3 over block.a, block.b
  EXPECT_DOUBLE_EQ(m.shares().update, 0);
}

void expect_refused(const std::string& text, const std::string& message) {
  const std::string file = write_profile("bad", text);
  try {
    profile_owners(read_layer_profile(file), four_layers().layers);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(file, 0), 0u) << e.what();
  }
}

// What does not describe this model, or is not a profile, is refused naming the line or layers.
TEST(LayerProfile, RefusesWhatDoesNotMatch) {
  expect_refused("stem,1,1\n", ":1: expected the header");
  expect_refused("layer,forward_ms,backward_ms\nstem,1,-2\n", ":2: '-2' is not a finite non-negative time");
  expect_refused("layer,forward_ms,backward_ms\nstem,1\n", ":2: expected 3 cells");
  expect_refused("layer,forward_ms,backward_ms\nstem,1,1\nstem,2,2\n", ":3: 'stem' is timed twice");
  expect_refused("layer,forward_ms,backward_ms\noptimizer,1,1\nstem,1,1\n",
                 ":2: the optimizer's update has no backward");
  expect_refused("layer,forward_ms,backward_ms\nstem,1,1\nblock,1,1\n", "no row times the model's layers loss");
  expect_refused("layer,forward_ms,backward_ms\nstem,1,1\nblock,1,1\nlayer4.2,1,1\nfc,1,1\n*,0,0\n",
                 "rows layer4.2, fc time no layer of this model");
  expect_refused("layer,forward_ms,backward_ms\n", "no layer rows");
}

// Through the scenario: a profile of another model is refused at compute.file before any run,
// one of this model (the MLP: fc1, fc2, fc3 and the rest) is accepted.
TEST(LayerProfile, ScenarioRefusesAnotherModelsProfile) {
  const std::string mlp = write_profile("mlp", "layer,forward_ms,backward_ms\nfc1,1,2\nfc2,1,2\nfc3,1,2\n*,0.5,0.5\n");
  const std::string resnet = write_profile("resnet", "layer,forward_ms,backward_ms\nconv1,1,2\nlayer1.0,1,2\n*,1,1\n");
  const std::string yaml = "workload: {model: mlp}\ncompute: {model: profile, file: ";
  EXPECT_NO_THROW(parse_scenario(yaml + mlp + "}\n", "s.yaml"));
  try {
    parse_scenario(yaml + resnet + "}\n", "s.yaml");
    ADD_FAILURE() << "accepted a ResNet's profile for an MLP";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("s.yaml:2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rows conv1, layer1.0 time no layer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_scenario("compute: {model: profile}\n", "s.yaml"), ScenarioError);
}

}  // namespace
}  // namespace testbed
