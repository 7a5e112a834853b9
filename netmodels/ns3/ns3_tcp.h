// TCP behaviour the testbed adds to ns-3's: the congestion-control variant, Linux's slow start
// after idle and cwnd validation, and the per-connection state that memoization compares.
#pragma once

#include <ns3/nstime.h>
#include <ns3/tcp-congestion-ops.h>

#include <cstdint>
#include <string>

#include "netmodels/ns3_choices.h"

namespace testbed {

// ns-3's congestion-control TypeId for a variant.
ns3::TypeId tcp_variant(TcpVariant variant);

// Wraps one connection's congestion control (any ns-3 variant) with two things Linux does
// and ns-3 3.37 does not:
//  - cwnd validation in slow start (RFC 7661, Linux tcp_is_cwnd_limited): the window grows
//    only while the sender uses half of it. ns-3 grows cwnd on every ACK, so an application
//    that sends less than its window (every collective) inflates it without bound;
//  - slow start after idle (RFC 2861/5681 4.1, Linux net.ipv4.tcp_slow_start_after_idle=1):
//    when data is sent after more than an RTO of silence, cwnd halves once per idle RTO
//    down to the initial window, and ssthresh keeps 3/4 of the old cwnd.
// Variants that run their own control loop (BBR: HasCongControl) manage idle themselves,
// as in Linux, and are passed through untouched.
class LinuxTcpBehaviour final : public ns3::TcpCongestionOps {
 public:
  static ns3::TypeId GetTypeId();
  LinuxTcpBehaviour() = default;
  LinuxTcpBehaviour(ns3::Ptr<ns3::TcpCongestionOps> inner, bool slow_start_after_idle, uint32_t initial_cwnd_segments);
  LinuxTcpBehaviour(const LinuxTcpBehaviour& other);

  // Fed by the socket's traces: the last data segment sent, the current retransmission timeout.
  void on_data_sent(ns3::Time now) {
    last_data_sent_ = now;
    sent_data_ = true;
  }
  void on_rto(ns3::Time rto) { rto_ = rto; }
  // And the last segment the sender received (an ACK): when its traffic last moved.
  void on_segment_received(ns3::Time now) {
    last_received_ = now;
    received_ = true;
  }
  bool received() const { return received_; }
  ns3::Time last_received() const { return last_received_; }

  // The state that decides how this connection's next data travels once every byte is delivered,
  // as text ("" before the connection exists). Exact where it matters: see ns3_network.cpp.
  std::string state() const;
  // When it last sent data (ns-3 time; a network that lags the engine's clock may have moved it
  // before zero), if it ever has.
  bool sent_data() const { return sent_data_; }
  ns3::Time last_data_sent() const { return last_data_sent_; }
  void set_last_data_sent(ns3::Time t) { on_data_sent(t); }
  uint32_t bytes_in_flight() const;
  uint32_t high_tx_mark() const;  // the highest sequence number sent (ns-3's m_highTxMark)
  ns3::Time rto() const { return rto_; }
  ns3::Time smoothed_rtt() const;

  std::string GetName() const override;
  void Init(ns3::Ptr<ns3::TcpSocketState> tcb) override;
  uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytes_in_flight) override;
  void IncreaseWindow(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segments_acked) override;
  void PktsAcked(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segments_acked, const ns3::Time& rtt) override;
  void CongestionStateSet(ns3::Ptr<ns3::TcpSocketState> tcb, ns3::TcpSocketState::TcpCongState_t state) override;
  void CwndEvent(ns3::Ptr<ns3::TcpSocketState> tcb, ns3::TcpSocketState::TcpCAEvent_t event) override;
  bool HasCongControl() const override;
  void CongControl(ns3::Ptr<ns3::TcpSocketState> tcb, const ns3::TcpRateOps::TcpRateConnection& rc,
                   const ns3::TcpRateOps::TcpRateSample& rs) override;
  ns3::Ptr<ns3::TcpCongestionOps> Fork() override;

 private:
  void restart_after_idle(ns3::TcpSocketState& tcb) const;

  ns3::Ptr<ns3::TcpCongestionOps> inner_;
  ns3::Ptr<ns3::TcpSocketState> tcb_;  // the connection's state, for state()
  bool slow_start_after_idle_ = true;
  uint32_t initial_cwnd_segments_ = 10;
  ns3::Time last_data_sent_ = ns3::Seconds(0);
  bool sent_data_ = false;
  ns3::Time last_received_ = ns3::Seconds(0);
  bool received_ = false;
  ns3::Time rto_ = ns3::Seconds(1);
};

}  // namespace testbed
