// Checkpoint files: a short text header (step, scenario fingerprint, row counts, payload size,
// checksum), then the payload. FNV-1a 64 over header and payload: it is there to catch a torn
// or damaged file, not an adversary.
#include "sim/output/resume_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/config/input_error.h"
#include "sim/config/scenario_loader.h"

namespace testbed {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFirstLine = "testbed checkpoint 1";

uint64_t fnv1a(const std::string& text, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string file_name(int step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08d.ckpt", step);
  return name;
}

std::string header_of(const Checkpoint& c) {
  std::ostringstream h;
  h << kFirstLine << "\n"
    << "step " << c.step << "\n"
    << "scenario " << c.fingerprint << "\n"
    << "rows " << c.mark.train_rows << " " << c.mark.eval_rows << " " << c.mark.messages << " " << c.mark.lost_bytes
    << "\n"
    << "payload " << c.payload.size() << "\n";
  return h.str();
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) throw std::runtime_error("checkpoint " + path + ": cannot write (" + std::strerror(errno) + ")");
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::string checkpoint_dir(const std::string& output_path) { return output_path + ".resume"; }

std::string scenario_fingerprint(const Scenario& scenario) {
  Scenario s = scenario;
  s.output.path.clear();
  s.output.resume_every = 0;
  return hex(fnv1a(to_yaml(s)));
}

void write_checkpoint(const std::string& dir, const Checkpoint& checkpoint, bool kill_halfway) {
  fs::create_directories(dir);
  const std::string header = header_of(checkpoint);
  const std::string sum = "checksum " + hex(fnv1a(checkpoint.payload, fnv1a(header))) + "\n";
  const std::string path = (fs::path(dir) / file_name(checkpoint.step)).string();
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("checkpoint " + temporary + ": cannot create (" + std::strerror(errno) + ")");
  try {
    write_all(fd, header.data(), header.size(), temporary);
    write_all(fd, sum.data(), sum.size(), temporary);
    const size_t half = kill_halfway ? checkpoint.payload.size() / 2 : checkpoint.payload.size();
    write_all(fd, checkpoint.payload.data(), half, temporary);
    if (kill_halfway) {
      ::fsync(fd);
      std::raise(SIGKILL);
    }
    if (::fsync(fd) != 0)
      throw std::runtime_error("checkpoint " + temporary + ": cannot sync (" + std::strerror(errno) + ")");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw std::runtime_error("checkpoint " + path + ": cannot rename (" + ec.message() + ")");
  sync_dir(dir);
  // Only the newest is needed; older ones go once this one is safely named.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name != file_name(checkpoint.step) && name.rfind("step-", 0) == 0) fs::remove(entry.path(), ec);
  }
}

std::optional<Checkpoint> latest_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::string newest;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) == 0 && entry.path().extension() == ".ckpt" && name > newest) newest = name;
  }
  if (newest.empty()) return std::nullopt;
  const std::string path = (fs::path(dir) / newest).string();
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw InputError(path + ": cannot read the checkpoint");

  auto refuse = [&](const std::string& why) -> InputError {
    return InputError(path + ": " + why + "; nothing was changed (run without --resume to start over)");
  };
  std::istringstream text(bytes);
  std::string line;
  Checkpoint c;
  size_t payload_size = 0;
  std::string sum, word;
  if (!std::getline(text, line) || line != kFirstLine) throw refuse("not a testbed checkpoint");
  if (!(text >> word >> c.step) || word != "step") throw refuse("truncated or corrupt checkpoint (no step)");
  if (!(text >> word >> c.fingerprint) || word != "scenario")
    throw refuse("truncated or corrupt checkpoint (no scenario)");
  if (!(text >> word >> c.mark.train_rows >> c.mark.eval_rows >> c.mark.messages >> c.mark.lost_bytes) ||
      word != "rows")
    throw refuse("truncated or corrupt checkpoint (no row counts)");
  if (!(text >> word >> payload_size) || word != "payload")
    throw refuse("truncated or corrupt checkpoint (no payload size)");
  if (!(text >> word >> sum) || word != "checksum" || text.get() != '\n')
    throw refuse("truncated or corrupt checkpoint (no checksum)");
  const size_t start = static_cast<size_t>(text.tellg());
  if (bytes.size() - start != payload_size)
    throw refuse("truncated checkpoint (" + std::to_string(bytes.size() - start) + " of " +
                 std::to_string(payload_size) + " payload bytes)");
  c.payload = bytes.substr(start);
  if (hex(fnv1a(c.payload, fnv1a(header_of(c)))) != sum) throw refuse("corrupt checkpoint (checksum mismatch)");
  return c;
}

void remove_checkpoints(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace testbed
