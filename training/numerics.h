// Which CPU kernels training runs: one portable family on every x86-64 machine with AVX2, or
// the machine's own fastest (docs/guarantees.md, "the same bits on every machine").
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace testbed {

// LibTorch picks its vectorised kernels (ATen's CPU capability) at its first operation, OpenBLAS
// its GEMM kernels when it loads, oneDNN its convolution kernels at its first call: each by the
// CPU it finds and by environment variables (ATEN_CPU_CAPABILITY, OPENBLAS_CORETYPE,
// DNNL_MAX_CPU_ISA). Each choice sums in another order, so the same run gives other bits on
// another machine. Portable numerics pin ATen to its scalar (DEFAULT) kernels and OpenBLAS to
// its Haswell kernels (AVX2 and FMA), and turn oneDNN off (its convolutions' blocking follows the
// core count and cache sizes), so that convolutions run as unfold + OpenBLAS GEMM.
//
// Call first in main (before any LibTorch operation): unless TESTBED_NUMERICS=native, pins ATen
// and OpenBLAS in this process when the CPU has AVX2 and FMA. The environment is left as found.
// `restartable`: this process is the testbed binary, which may start itself again
// (restart_for_numerics).
void pin_portable_kernels(bool restartable);

// For a run that asks for `numerics` (portable | native): turns oneDNN off or on, and when this
// process's ATen and OpenBLAS cannot serve it (pinned at start but native asked, or the other
// way round), starts the binary again with the same arguments and TESTBED_NUMERICS set (execv;
// returns only when that is not possible, or not needed).
void restart_for_numerics(const std::string& numerics, char** argv);
void use_numerics(const std::string& numerics);

// What produced a run's bits, as name-value pairs in a fixed order (the HDF5 file's /numerics):
// whether numerics were portable and why not, ATen's capability, OpenBLAS's kernels and library,
// oneDNN, threads, LibTorch's version, the CPU, and the kernel-choice variables as found.
std::vector<std::pair<std::string, std::string>> numeric_environment(const std::string& numerics);

// Whether this CPU has AVX2 and FMA: what OpenBLAS's Haswell kernels and the models' own vector
// kernels (models/gelu.cpp, models/softmax.cpp) need.
bool cpu_has_avx2_fma();

// True when the kernels in effect are the portable family (ATen DEFAULT, OpenBLAS Haswell, oneDNN off).
bool numerics_portable();

// Why a run that asked for portable numerics does not have them ("" when it does, or asked for native).
std::string not_portable_reason(const std::string& numerics);

}  // namespace testbed
