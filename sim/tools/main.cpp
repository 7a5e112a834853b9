// The testbed binary: `testbed run SCENARIO`, `testbed sweep`, ... (sim/tools/cli.h).
#include "sim/tools/cli.h"
#include "training/numerics.h"

int main(int argc, char** argv) {
  testbed::pin_portable_kernels(/*restartable=*/true);
  return testbed::run_cli(argc, argv);
}
