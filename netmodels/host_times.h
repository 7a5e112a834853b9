// Host seconds spent where (for testbed_bench's overhead split between the testbed and ns-3):
// a scope timer and a Network wrapper that charges send() and delivery callbacks apart.
#pragma once

#include <chrono>
#include <memory>

#include "netmodels/network.h"

namespace testbed {

struct HostTimes {
  double run = 0;            // the whole event loop
  double engine = 0;         // inside the engine's own events (training, collectives, eval, recording)
  double local_compute = 0;  // the algorithm's local step (forward/backward) and its apply (optimizer)
  double eval = 0;
  double deliveries = 0;    // inside delivery callbacks: values landing in collectives' buffers, their /comm rows
  double recording = 0;     // writing /train and /eval rows (the recorder), outside deliveries
  double network_send = 0;  // inside Network::send, called from engine events
  double transfers = 0;     // a spread run: sending to and waiting for the other processes (Gloo)
  int64_t receives = 0;     // a spread run: tensors received from the other processes
  double ns3() const { return run - engine + network_send; }
  double testbed() const { return engine - eval - network_send; }
};

// Adds the host seconds of a scope to a counter.
class HostTimer {
 public:
  explicit HostTimer(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~HostTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  HostTimer(const HostTimer&) = delete;
  HostTimer& operator=(const HostTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

// Charges delivery callbacks to the engine and send() calls to the network.
class TimedNetwork : public Network {
 public:
  TimedNetwork(std::shared_ptr<Network> inner, HostTimes& times) : inner_(std::move(inner)), times_(times) {}
  void send(const Message& message, OnDelivered on_delivered) override;
  std::string name() const override { return inner_->name(); }
  LinkBytes link_bytes() const override { return inner_->link_bytes(); }
  NetworkHold* hold() override { return inner_->hold(); }

 private:
  std::shared_ptr<Network> inner_;  // shared: a step's collectives take one memoized phase
  HostTimes& times_;
};

}  // namespace testbed
