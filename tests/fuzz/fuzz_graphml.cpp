// Fuzzes the GraphML (Topology Zoo) reader: a topology, or std::invalid_argument with the place.
#include <stdexcept>

#include "tests/fuzz/fuzz_input.h"
#include "topologies/graphml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  testbed::TopologySpec spec;
  spec.kind = TopologyKind::Graphml;
  spec.hosts = 3;
  spec.file = testbed::fuzz::scratch_file(".graphml", testbed::fuzz::text(data, size));
  try {
    (void)testbed::load_graphml(spec);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
