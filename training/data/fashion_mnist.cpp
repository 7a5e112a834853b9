// IDX reader: big-endian header, then raw unsigned bytes, gzip-compressed.
#include "training/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

namespace testbed {
namespace {

std::vector<uint8_t> read_gzip(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("missing data file " + path +
                             "; run scripts/install-deps.sh (Debian package dataset-fashion-mnist)");
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot open " + path);
  gzbuffer(file, 1 << 20);
  std::vector<uint8_t> out;
  size_t size = 0;
  int n = 0;
  do {
    if (out.size() - size < (1 << 20)) out.resize(std::max<size_t>(2 * out.size(), 1 << 22));
    n = gzread(file, out.data() + size, 1 << 20);
    if (n > 0) size += static_cast<size_t>(n);
  } while (n > 0);
  out.resize(size);
  gzclose(file);
  if (n < 0) throw std::runtime_error("corrupt gzip file " + path);
  return out;
}

uint32_t big_endian(const std::vector<uint8_t>& bytes, size_t offset) {
  return (uint32_t(bytes[offset]) << 24) | (uint32_t(bytes[offset + 1]) << 16) | (uint32_t(bytes[offset + 2]) << 8) |
         uint32_t(bytes[offset + 3]);
}

// Returns the payload as `dtype` after checking the magic number and element count.
torch::Tensor read_idx(const std::string& path, uint32_t magic, std::vector<int64_t> shape_tail,
                       torch::ScalarType dtype) {
  auto bytes = read_gzip(path);
  if (bytes.size() < 8 || big_endian(bytes, 0) != magic) {
    throw std::runtime_error(path + " is not an IDX file of the expected kind");
  }
  int64_t count = big_endian(bytes, 4);
  size_t header = 4 + 4 * (magic & 0xff);
  int64_t per_item = 1;
  for (auto d : shape_tail) per_item *= d;
  if (bytes.size() != header + size_t(count * per_item)) {
    throw std::runtime_error(path + " has the wrong size for its header");
  }
  std::vector<int64_t> shape{count};
  shape.insert(shape.end(), shape_tail.begin(), shape_tail.end());
  return torch::from_blob(bytes.data() + header, shape, torch::kUInt8).to(dtype);
}

}  // namespace

Dataset load_fashion_mnist(const std::string& directory) {
  // In place: every run and test process loads the set, and three 188 MB temporaries cost
  // more than the decompression (the same operations, so the same values).
  auto images = [&](const std::string& split) {
    auto x = read_idx(directory + "/" + split + "-images-idx3-ubyte.gz", 0x00000803, {1, 28, 28}, torch::kFloat32);
    return x.div_(255.0).sub_(kFashionMnistMean).div_(kFashionMnistStd);
  };
  auto labels = [&](const std::string& split) {
    return read_idx(directory + "/" + split + "-labels-idx1-ubyte.gz", 0x00000801, {}, torch::kInt64);
  };
  Dataset d;
  d.train_inputs = images("train");
  d.train_targets = labels("train");
  d.test_inputs = images("t10k");
  d.test_targets = labels("t10k");
  d.train_groups = d.train_targets;
  d.num_groups = 10;
  d.outputs = 10;
  return d;
}

}  // namespace testbed
