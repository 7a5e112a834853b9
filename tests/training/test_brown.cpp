// The Brown corpus loader: tags stripped, seeded splits, windows, genres.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "training/data/brown.h"

namespace testbed {
namespace {

const std::string kBrownDir = std::string(TESTBED_DATA_DIR) + "/brown";

std::string decode(const torch::Tensor& bytes) {
  auto flat = bytes.contiguous().view(-1);
  const auto* p = flat.data_ptr<int64_t>();
  std::string s(static_cast<size_t>(flat.numel()), '\0');
  for (int64_t i = 0; i < flat.numel(); ++i) s[static_cast<size_t>(i)] = static_cast<char>(p[i]);
  return s;
}

// The corpus is loaded once per context and reused: each load reads 500 files.
const Dataset& brown(uint64_t seed, int context = 64) {
  static std::map<std::pair<uint64_t, int>, Dataset> cache;
  auto key = std::make_pair(seed, context);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, load_brown({kBrownDir, context, 0.1, seed})).first;
  return it->second;
}

TEST(Brown, StripsTagsFromALiteralSample) {
  const std::string tagged =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl Jury/nn-tl said/vbd ./.\n\n\n"
      "\tIt/pps costs/vbz 1/2/cd ``/`` per/in mg/l/nn ''/'' and/or/cc Atlanta's/np$ ,/,\n"
      "\tshe/pps said/vbd ./.\n";
  EXPECT_EQ(strip_brown_tags(tagged),
            "The Fulton County Grand Jury said .\n"
            "It costs 1/2 `` per mg/l '' and/or Atlanta's ,\n"
            "she said .");
  EXPECT_EQ(strip_brown_tags(""), "");
  EXPECT_EQ(strip_brown_tags("  \t\n\n"), "");
}

TEST(Brown, FifteenCategoriesInFileLetterOrder) {
  const auto& c = brown_categories();
  ASSERT_EQ(c.size(), 15u);
  EXPECT_EQ(c.front(), "news");
  EXPECT_EQ(c.back(), "humor");
  EXPECT_EQ(std::set<std::string>(c.begin(), c.end()).size(), 15u);
}

TEST(Brown, LoadsTextWithoutTags) {
  const auto& d = brown(0);
  EXPECT_EQ(d.task, Task::Language);
  EXPECT_EQ(d.outputs, 256);
  EXPECT_EQ(d.num_groups, 15);
  ASSERT_EQ(d.train_inputs.dim(), 2);
  EXPECT_EQ(d.train_inputs.size(1), 64);
  EXPECT_EQ(d.train_inputs.scalar_type(), torch::kLong);
  EXPECT_EQ(d.test_targets.scalar_type(), torch::kLong);
  EXPECT_GT(d.train_size(), 70000);  // ~6.1 MB of text / 64
  EXPECT_GT(d.test_size(), 3000);

  std::string text = decode(d.train_inputs) + decode(d.test_inputs);
  std::set<unsigned char> distinct(text.begin(), text.end());
  EXPECT_GE(distinct.size(), 75u);
  EXPECT_LE(distinct.size(), 95u);
  for (unsigned char byte : distinct) EXPECT_LT(byte, 128) << "byte " << int(byte);
  // Tags are lowercase letters, '$', '*', '+' and '-' after a slash, ending a token.
  for (const char* tag : {"/at ", "/nn", "/np", "/vbd", "/jj", "/in ", "/cd", "/. ", "/, ", "/pps", "-tl", "-hl"}) {
    EXPECT_EQ(text.find(tag), std::string::npos) << "tag " << tag << " left in the text";
  }
  EXPECT_NE(text.find("The Fulton County Grand Jury said Friday"), std::string::npos);
}

TEST(Brown, TargetsAreInputsShiftedByOne) {
  const auto& d = brown(0);
  for (const auto* split : {&d.train_inputs, &d.test_inputs}) {
    const auto& inputs = *split;
    const auto& targets = split == &d.train_inputs ? d.train_targets : d.test_targets;
    ASSERT_EQ(inputs.sizes(), targets.sizes());
    EXPECT_TRUE(torch::equal(inputs.slice(1, 1), targets.slice(1, 0, -1)));
    // Non-overlapping windows with stride context: each window's last target is the
    // next window's first input.
    EXPECT_TRUE(torch::equal(targets.slice(0, 0, -1).select(1, -1), inputs.slice(0, 1).select(1, 0)));
  }
}

TEST(Brown, SameSeedSameSplitOtherSeedOtherSplit) {
  const auto& a = brown(0);
  auto again = load_brown({kBrownDir, 64, 0.1, 0});
  EXPECT_TRUE(torch::equal(a.train_inputs, again.train_inputs));
  EXPECT_TRUE(torch::equal(a.train_targets, again.train_targets));
  EXPECT_TRUE(torch::equal(a.test_inputs, again.test_inputs));
  EXPECT_TRUE(torch::equal(a.test_targets, again.test_targets));
  EXPECT_TRUE(torch::equal(a.train_groups, again.train_groups));

  const auto& b = brown(1);
  bool same_test = a.test_inputs.sizes() == b.test_inputs.sizes() && torch::equal(a.test_inputs, b.test_inputs);
  EXPECT_FALSE(same_test);
  // Both splits hold out 50 of 500 documents and keep all the text between them.
  int64_t total_a = a.train_inputs.numel() + a.test_inputs.numel();
  int64_t total_b = b.train_inputs.numel() + b.test_inputs.numel();
  EXPECT_NEAR(static_cast<double>(total_a), static_cast<double>(total_b), 200.0);
  double held = static_cast<double>(a.test_inputs.numel()) / static_cast<double>(total_a);
  EXPECT_GT(held, 0.05);
  EXPECT_LT(held, 0.15);
}

TEST(Brown, EveryTrainWindowHasAGenreAndAllGenresOccur) {
  const auto& d = brown(0);
  ASSERT_EQ(d.train_groups.dim(), 1);
  ASSERT_EQ(d.train_groups.size(0), d.train_size());
  EXPECT_EQ(d.train_groups.scalar_type(), torch::kLong);
  EXPECT_GE(d.train_groups.min().item<int64_t>(), 0);
  EXPECT_LT(d.train_groups.max().item<int64_t>(), 15);
  auto counts = torch::bincount(d.train_groups, {}, 15);
  for (int g = 0; g < 15; ++g) EXPECT_GT(counts[g].item<int64_t>(), 0) << brown_categories()[g];
  // Files are concatenated in name order, so the first window is press reportage
  // (ca01 unless held out) and genres never decrease along the training text.
  EXPECT_EQ(d.train_groups[0].item<int64_t>(), 0);
  auto g = d.train_groups;
  EXPECT_TRUE((g.slice(0, 1) >= g.slice(0, 0, -1)).all().item<bool>());
}

// The genre task: the same windows, labelled by genre. Test genres follow the held-out files in
// name order too, so they never decrease either, and every held-out window has a genre.
TEST(Brown, GenreTaskLabelsTheSameWindowsByGenre) {
  const Dataset text = load_brown({kBrownDir, 64, 0.1, 0});
  const Dataset genres = load_brown_genres({kBrownDir, 64, 0.1, 0});
  EXPECT_EQ(genres.task, Task::Classification);
  EXPECT_EQ(genres.outputs, 15);
  EXPECT_TRUE(torch::equal(genres.train_inputs, text.train_inputs));
  EXPECT_TRUE(torch::equal(genres.test_inputs, text.test_inputs));
  EXPECT_TRUE(torch::equal(genres.train_targets, text.train_groups));
  ASSERT_EQ(genres.test_targets.sizes(), (std::vector<int64_t>{genres.test_size()}));
  const auto t = genres.test_targets;
  EXPECT_GE(t.min().item<int64_t>(), 0);
  EXPECT_LT(t.max().item<int64_t>(), 15);
  EXPECT_TRUE((t.slice(0, 1) >= t.slice(0, 0, -1)).all().item<bool>());
  EXPECT_GT(std::get<0>(at::_unique(t)).numel(), 1);
}

TEST(Brown, ContextSetsTheWindowWidth) {
  const auto& d = brown(0, 128);
  EXPECT_EQ(d.train_inputs.size(1), 128);
  EXPECT_EQ(d.test_targets.size(1), 128);
  const auto& d64 = brown(0);
  EXPECT_NEAR(static_cast<double>(d.train_size()) * 2, static_cast<double>(d64.train_size()), 2.0);
}

TEST(Brown, MissingFilesNameTheInstallScript) {
  auto expect_hint = [](const std::string& dir) {
    try {
      load_brown({dir, 64, 0.1, 0});
      ADD_FAILURE() << "no exception for " << dir;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("scripts/install-deps.sh"), std::string::npos) << e.what();
    }
  };
  expect_hint("/nonexistent/brown");
  auto empty = std::filesystem::temp_directory_path() / "testbed_empty_brown";
  std::filesystem::create_directories(empty);
  expect_hint(empty.string());
  std::filesystem::remove_all(empty);
}

}  // namespace
}  // namespace testbed
