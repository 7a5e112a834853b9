// The testbed binary: `testbed run SCENARIO`, `testbed sweep`, ... (sim/tools/cli.h).
#include "sim/tools/cli.h"

int main(int argc, char** argv) { return testbed::run_cli(argc, argv); }
