// Linux TCP behaviours on top of ns-3's congestion control, and the variants' TypeIds.
#include "netmodels/ns3/ns3_tcp.h"

#include <ns3/simulator.h>
#include <ns3/tcp-bbr.h>
#include <ns3/tcp-cubic.h>
#include <ns3/tcp-dctcp.h>
#include <ns3/tcp-socket-state.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace testbed {

ns3::TypeId tcp_variant(TcpVariant variant) {
  switch (variant) {
    case TcpVariant::NewReno:
      return ns3::TcpNewReno::GetTypeId();
    case TcpVariant::Cubic:
      return ns3::TcpCubic::GetTypeId();
    case TcpVariant::Bbr:
      return ns3::TcpBbr::GetTypeId();
    case TcpVariant::Dctcp:
      return ns3::TcpDctcp::GetTypeId();
  }
  throw std::invalid_argument("unknown TCP variant " + std::to_string(static_cast<int>(variant)));
}

ns3::TypeId LinuxTcpBehaviour::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("testbed::LinuxTcpBehaviour")
                               .SetParent<ns3::TcpCongestionOps>()
                               .SetGroupName("Internet")
                               .AddConstructor<LinuxTcpBehaviour>();
  return tid;
}

LinuxTcpBehaviour::LinuxTcpBehaviour(ns3::Ptr<ns3::TcpCongestionOps> inner, bool slow_start_after_idle,
                                     uint32_t initial_cwnd_segments)
    : inner_(std::move(inner)),
      slow_start_after_idle_(slow_start_after_idle),
      initial_cwnd_segments_(initial_cwnd_segments) {}

LinuxTcpBehaviour::LinuxTcpBehaviour(const LinuxTcpBehaviour& other)
    : ns3::TcpCongestionOps(other),
      inner_(other.inner_ ? other.inner_->Fork() : nullptr),
      slow_start_after_idle_(other.slow_start_after_idle_),
      initial_cwnd_segments_(other.initial_cwnd_segments_) {}

std::string LinuxTcpBehaviour::GetName() const { return inner_->GetName(); }

void LinuxTcpBehaviour::Init(ns3::Ptr<ns3::TcpSocketState> tcb) {
  tcb_ = tcb;
  inner_->Init(tcb);
}

uint32_t LinuxTcpBehaviour::GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytes_in_flight) {
  return inner_->GetSsThresh(tcb, bytes_in_flight);
}

void LinuxTcpBehaviour::IncreaseWindow(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segments_acked) {
  // In slow start the window grows only while the sender uses at least half of it (Linux's
  // tcp_is_cwnd_limited: cwnd < 2 x packets out). What was outstanding when this ACK left
  // the receiver: m_bytesInFlight no longer counts what the ACK acknowledges.
  // Congestion avoidance is left as ns-3 has it (its loss recovery is what tests/netmodels/test_tcp_loss.cpp
  // checks against Mathis et al.); it only begins after a loss, where nothing is memoized.
  if (tcb->m_cWnd < tcb->m_ssThresh) {
    const uint64_t in_flight = tcb->m_bytesInFlight.Get() + uint64_t{segments_acked} * tcb->m_segmentSize;
    if (tcb->m_cWnd.Get() >= 2 * in_flight) return;
  }
  inner_->IncreaseWindow(tcb, segments_acked);
}

void LinuxTcpBehaviour::PktsAcked(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t segments_acked, const ns3::Time& rtt) {
  inner_->PktsAcked(tcb, segments_acked, rtt);
}

void LinuxTcpBehaviour::CongestionStateSet(ns3::Ptr<ns3::TcpSocketState> tcb,
                                           ns3::TcpSocketState::TcpCongState_t state) {
  inner_->CongestionStateSet(tcb, state);
}

void LinuxTcpBehaviour::CwndEvent(ns3::Ptr<ns3::TcpSocketState> tcb, ns3::TcpSocketState::TcpCAEvent_t event) {
  // ns-3 raises TX_START when it sends with nothing in flight: Linux's packets_out == 0 test.
  if (event == ns3::TcpSocketState::CA_EVENT_TX_START && slow_start_after_idle_ && !inner_->HasCongControl())
    restart_after_idle(*tcb);
  inner_->CwndEvent(tcb, event);
}

void LinuxTcpBehaviour::restart_after_idle(ns3::TcpSocketState& tcb) const {
  if (!sent_data_) return;  // the connection's first data
  ns3::Time idle = ns3::Simulator::Now() - last_data_sent_;
  if (idle <= rto_) return;
  uint32_t cwnd = tcb.m_cWnd.Get();
  const uint32_t restart = std::min(initial_cwnd_segments_ * tcb.m_segmentSize, cwnd);  // never raises it
  if (tcb.m_congState == ns3::TcpSocketState::CA_OPEN)
    tcb.m_ssThresh = std::max(tcb.m_ssThresh.Get(), (cwnd >> 1) + (cwnd >> 2));
  while ((idle -= rto_).IsStrictlyPositive() && cwnd > restart) cwnd >>= 1;
  tcb.m_cWnd = std::max(cwnd, restart);
  tcb.m_cWndInfl = tcb.m_cWnd.Get();
}

bool LinuxTcpBehaviour::HasCongControl() const { return inner_->HasCongControl(); }

void LinuxTcpBehaviour::CongControl(ns3::Ptr<ns3::TcpSocketState> tcb, const ns3::TcpRateOps::TcpRateConnection& rc,
                                    const ns3::TcpRateOps::TcpRateSample& rs) {
  inner_->CongControl(tcb, rc, rs);
}

ns3::Ptr<ns3::TcpCongestionOps> LinuxTcpBehaviour::Fork() { return ns3::CopyObject<LinuxTcpBehaviour>(this); }

uint32_t LinuxTcpBehaviour::bytes_in_flight() const { return tcb_ ? tcb_->m_bytesInFlight.Get() : 0; }

uint32_t LinuxTcpBehaviour::high_tx_mark() const { return tcb_ ? tcb_->m_highTxMark.Get().GetValue() : 0; }

ns3::Time LinuxTcpBehaviour::smoothed_rtt() const { return tcb_ ? tcb_->m_lastRtt.Get() : ns3::Time(0); }

std::string LinuxTcpBehaviour::state() const {
  if (!tcb_) return "";
  std::ostringstream out;
  out << tcb_->m_cWnd.Get() << ',' << tcb_->m_ssThresh.Get() << ',' << static_cast<int>(tcb_->m_congState.Get()) << ','
      << rto_.GetTimeStep();
  return out.str();
}

}  // namespace testbed
