// main() of the test programs that train: portable kernels pinned first, as the testbed binary does.
#include <gtest/gtest.h>

#include "training/numerics.h"

int main(int argc, char** argv) {
  // Before any LibTorch operation, so that what a test trains gives the bits the binary gives,
  // whatever the machine's CPU and environment (a test program cannot start itself again).
  testbed::pin_portable_kernels(false);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
