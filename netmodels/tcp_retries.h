// How many times the ns3 backend's TCP resends a segment, or a SYN, before it drops the
// connection (ns-3.37's DataRetries and ConnCount). One number for the two readers: the backend,
// which sets it (ns3/ns3_faults.cpp), and the scenario rule that bounds TCP's patience with it
// (sim/config/scenario_rules.cpp, tcp_give_up).
#pragma once

namespace testbed {

// ns-3's own default without faults: 6, about 25 s of doubling RTOs from 200 ms. With faults,
// Linux's tcp_retries2 (15, about 15 minutes): a dropped connection would lose its messages, and
// a real stack keeps trying through an outage.
constexpr int ns3_tcp_retries(bool faults) { return faults ? 15 : 6; }

}  // namespace testbed
