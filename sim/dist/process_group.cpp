// c10d's FileStore or TCPStore rendezvous and its ProcessGroupGloo, as the run needs them.
#include "sim/dist/process_group.h"

#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <stdexcept>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace testbed {
namespace {

constexpr size_t kSendsInFlight = 256;

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Where the loopback rendezvous meets: one file per user and port, as a port is one run's.
// Adds the host seconds of a scope to a counter.
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// LibTorch's errors carry a C++ backtrace in what(): the sentence alone.
std::string sentence(const std::exception& e) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&e)) return torch_error->what_without_backtrace();
  return e.what();
}

}  // namespace

std::string rendezvous_file(int port) {
  return (std::filesystem::temp_directory_path() /
          ("testbed-rendezvous-" + std::to_string(getuid()) + "-" + std::to_string(port)))
      .string();
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
  std::deque<std::pair<c10::intrusive_ptr<c10d::Work>, int>> sends;            // in flight, oldest first, with the peer
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, int>> late_sends;      // whose receive comes when needed
  std::map<int64_t, std::pair<c10::intrusive_ptr<c10d::Work>, int>> receives;  // posted: by ticket, with the peer
  std::string file;  // the loopback rendezvous, removed at the end
};

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options) : impl_(std::make_unique<Impl>()), options_(options) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world)
    throw std::invalid_argument("rank " + std::to_string(options.rank) + " is not in a world of " +
                                std::to_string(options.world));
  const auto timeout = millis(options.timeout_s);
  const bool local = is_loopback(options.master_addr);
  try {
    if (local) {
      // LibTorch 1.13's TCPStore listens on every interface; on one machine a file meets as well.
      impl_->file = rendezvous_file(options.master_port);
      impl_->store = c10::make_intrusive<c10d::FileStore>(impl_->file, options.world);
      impl_->store->setTimeout(timeout);
    } else {
      c10d::TCPStoreOptions o;
      o.port = static_cast<uint16_t>(options.master_port);
      o.isServer = options.rank == 0;
      o.numWorkers = options.world;
      o.timeout = timeout;
      impl_->store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, o);
    }
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
    char host[256] = "127.0.0.1";
    if (!local) gethostname(host, sizeof host);
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host));
    gloo_options->threads = 1;
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, options.rank, options.world, gloo_options);
  } catch (const std::exception& e) {
    impl_->store.reset();
    std::error_code ignored;
    if (!impl_->file.empty() && options.rank == 0) std::filesystem::remove(impl_->file, ignored);
    throw std::runtime_error("rank " + std::to_string(options.rank) + " of " + std::to_string(options.world) +
                             " could not meet the others at " + options.master_addr + ":" +
                             std::to_string(options.master_port) + " within " +
                             std::to_string(static_cast<int>(options.timeout_s)) + " s: " + sentence(e));
  }
}

ProcessGroup::~ProcessGroup() {
  cancel_receives();
  impl_->sends.clear();
  impl_->late_sends.clear();
  impl_->gloo.reset();
  impl_->store.reset();
  if (!impl_->file.empty() && options_.rank == 0) {
    std::error_code ec;
    std::filesystem::remove(impl_->file, ec);
  }
}

void ProcessGroup::send(const torch::Tensor& tensor, int peer, uint32_t tag, bool posted_by_now) {
  Stopwatch timer(transfer_seconds_);
  std::vector<at::Tensor> tensors{tensor.contiguous()};
  auto work = impl_->gloo->send(tensors, peer, static_cast<int>(tag));
  if (!posted_by_now) {
    impl_->late_sends.emplace_back(std::move(work), peer);
    return;
  }
  impl_->sends.emplace_back(std::move(work), peer);
  // A send holds its tensor until it is waited for: the oldest are, so a long run's list stays
  // short. Never a deadlock: the peer posts the receive of such a send at its event or an
  // earlier one, and this process's sends up to that event are all posted.
  while (impl_->sends.size() > kSendsInFlight) {
    wait_send(impl_->sends.front());
    impl_->sends.pop_front();
  }
}

void ProcessGroup::wait_send(const std::pair<c10::intrusive_ptr<c10d::Work>, int>& send) {
  try {
    send.first->wait(millis(options_.timeout_s));
  } catch (const std::exception& e) {
    const std::string reported = reported_failures();
    throw std::runtime_error("rank " + std::to_string(send.second) + " did not take a tensor within " +
                             std::to_string(static_cast<int>(options_.timeout_s)) +
                             " s (--timeout): " + (reported.empty() ? sentence(e) : reported));
  }
}

void ProcessGroup::receive(torch::Tensor& tensor, int peer, uint32_t tag, const std::string& what) {
  wait_receive(post_receive(tensor, peer, tag), what);
}

int64_t ProcessGroup::post_receive(torch::Tensor& tensor, int peer, uint32_t tag) {
  Stopwatch timer(transfer_seconds_);
  std::vector<at::Tensor> tensors{tensor};
  const int64_t ticket = next_ticket_++;
  impl_->receives.emplace(ticket, std::pair{impl_->gloo->recv(tensors, peer, static_cast<int>(tag)), peer});
  return ticket;
}

void ProcessGroup::cancel_receives() {
  for (auto& [ticket, receive] : impl_->receives) receive.first->abort();
  impl_->receives.clear();
}

void ProcessGroup::wait_receive(int64_t ticket, const std::string& what) {
  Stopwatch timer(transfer_seconds_);
  ++receives_;
  auto it = impl_->receives.find(ticket);
  if (it == impl_->receives.end()) throw std::logic_error("no receive was posted as ticket " + std::to_string(ticket));
  const auto [work, peer] = it->second;
  impl_->receives.erase(it);
  try {
    work->wait(millis(options_.timeout_s));
  } catch (const std::exception& e) {
    const std::string text = sentence(e);
    if (text.find("Timed out") != std::string::npos)
      throw std::runtime_error("rank " + std::to_string(peer) + " sent no " + what + " within " +
                               std::to_string(static_cast<int>(options_.timeout_s)) + " s (--timeout): " + text);
    const std::string reported = reported_failures();
    throw std::runtime_error("rank " + std::to_string(peer) + " failed while this process waited for its " + what +
                             (reported.empty() ? ": " + text : " (" + reported + ")"));
  }
}

namespace {
std::string failure_key(int rank) { return "testbed/failure/" + std::to_string(rank); }
}  // namespace

void ProcessGroup::report_failure(const std::string& why) noexcept {
  try {
    const std::string text = "rank " + std::to_string(options_.rank) + ": " + why;
    impl_->store->set(failure_key(options_.rank), std::vector<uint8_t>(text.begin(), text.end()));
  } catch (...) {  // the store went with its peers: nothing more to tell
  }
}

std::string ProcessGroup::reported_failures() const {
  std::string out;
  for (int r = 0; r < options_.world; ++r) {
    if (r == options_.rank) continue;
    try {
      if (!impl_->store->check({failure_key(r)})) continue;
      const auto value = impl_->store->get(failure_key(r));
      out += (out.empty() ? "" : "; ") + std::string(value.begin(), value.end());
    } catch (...) {
    }
  }
  return out;
}

void ProcessGroup::finish_sends() {
  Stopwatch timer(transfer_seconds_);
  for (const auto& send : impl_->sends) wait_send(send);
  for (const auto& send : impl_->late_sends) wait_send(send);
  impl_->sends.clear();
  impl_->late_sends.clear();
}

}  // namespace testbed
