// Pins the CPU kernels of ATen, OpenBLAS and oneDNN to one portable family, and says which are in effect.
#include "training/numerics.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>

#include <torch/torch.h>
#include <torch/version.h>

namespace testbed {
namespace {

// The variables that steer which kernels the libraries take, shown in the record as found.
const char* const kKernelVariables[] = {"ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "DNNL_MAX_CPU_ISA",
                                        "ONEDNN_MAX_CPU_ISA",  "GLIBC_TUNABLES",    "OMP_NUM_THREADS",
                                        "OPENBLAS_NUM_THREADS"};

// ATen's scalar kernels: its AVX2 loops compute each thread's chunk's tail with the scalar
// function (GELU's erf, exp), so their bits followed the thread count; the scalar ones do not,
// for 6-15 % more host time (docs/guarantees.md).
const char* const kPortableCapability = "DEFAULT";
const char* const kPortableBlasCore = "Haswell";

// The libraries' kernel choices are the process's, so what this file knows of them is too.
struct ProcessKernels {
  bool restartable = false;
  bool started_native = false;                             // TESTBED_NUMERICS=native when the process started
  std::string unpinned_why;                                // why ATen and OpenBLAS were left as they came
  std::vector<std::pair<std::string, std::string>> found;  // kKernelVariables as found
};

ProcessKernels& process_kernels() {
  static ProcessKernels k;
  return k;
}

template <class F>
F library_function(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

std::string openblas_core() {
  auto corename = library_function<char* (*)()>("openblas_get_corename");
  return corename ? corename() : "";
}

std::string openblas_config() {
  auto config = library_function<char* (*)()>("openblas_get_config");
  return config ? config() : "";
}

// The file whose sgemm_ serves LibTorch's matrix products (libblas.so.3 is an alternative:
// OpenBLAS, BLIS or the reference BLAS, whichever the system points it at).
std::string blas_library() {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info info{};
  if (!sgemm || !dladdr(sgemm, &info) || !info.dli_fname) return "unknown";
  char resolved[4096];
  return realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
}

// ATen fixes its capability the first time it is asked (show_config asks), so this also fixes it.
std::string aten_capability() {
  static const std::string capability = [] {
    std::smatch m;
    const std::string config = at::show_config();
    if (!std::regex_search(config, m, std::regex("CPU capability usage: ([A-Za-z0-9_ ]+)")))
      return std::string("unknown");
    return m[1].str() == "NO AVX" ? std::string("DEFAULT") : m[1].str();  // ATen prints its scalar kernels so
  }();
  return capability;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string cpu_features() {
  std::string out;
  if (__builtin_cpu_supports("avx2")) out += " avx2";
  if (__builtin_cpu_supports("fma")) out += " fma";
  if (__builtin_cpu_supports("avx512f")) out += " avx512f";
  return out.empty() ? "none of avx2 fma avx512f" : out.substr(1);
}

// oneDNN 2.x's dnnl_cpu_isa_t values.
std::string onednn_isa(int isa) {
  switch (isa) {
    case 0x1:
      return "sse41";
    case 0x3:
      return "avx";
    case 0x7:
      return "avx2";
    case 0x407:
      return "avx2_vnni";
    case 0x27:
      return "avx512_core";
    case 0x67:
      return "avx512_core_vnni";
    case 0xe7:
      return "avx512_core_bf16";
    case 0x3e7:
      return "avx512_core_amx";
    default: {
      char hex[16];
      std::snprintf(hex, sizeof hex, "isa 0x%x", isa);
      return hex;
    }
  }
}

// Sets `name` for the duration of `f`, then puts back what was there.
template <class F>
void with_variable(const char* name, const char* value, F f) {
  const char* before = std::getenv(name);
  const std::string saved = before ? before : "";
  setenv(name, value, 1);
  f();
  if (before)
    setenv(name, saved.c_str(), 1);
  else
    unsetenv(name);
}

bool aten_and_blas_pinned() { return aten_capability() == kPortableCapability && openblas_core() == kPortableBlasCore; }

}  // namespace

bool cpu_has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

void pin_portable_kernels(bool restartable) {
  ProcessKernels& k = process_kernels();
  k.restartable = restartable;
  for (const char* v : kKernelVariables)
    if (const char* value = std::getenv(v)) k.found.emplace_back(v, value);
  const char* mode = std::getenv("TESTBED_NUMERICS");
  k.started_native = mode && std::string(mode) == "native";
  if (k.started_native) {
    k.unpinned_why = "the process started with TESTBED_NUMERICS=native";
    return;
  }
  if (!cpu_has_avx2_fma()) {
    k.unpinned_why = "this CPU lacks AVX2 or FMA, which OpenBLAS's Haswell kernels need";
    return;
  }
  // ATen reads the variable once, at its first operation: none has run yet.
  with_variable("ATEN_CPU_CAPABILITY", "default", [] { aten_capability(); });
  if (openblas_core() != kPortableBlasCore) {
    auto quit = library_function<void (*)()>("gotoblas_dynamic_quit");
    auto init = library_function<void (*)()>("gotoblas_dynamic_init");
    // OpenBLAS chose its kernels when it loaded; with DYNAMIC_ARCH it can choose again, from
    // OPENBLAS_CORETYPE, before its first call.
    if (quit && init)
      with_variable("OPENBLAS_CORETYPE", kPortableBlasCore, [&] {
        quit();
        init();
      });
  }
  if (aten_capability() != kPortableCapability)
    k.unpinned_why = "ATen's CPU capability is " + aten_capability() + ", not DEFAULT (it was fixed before main)";
  else if (openblas_core() != kPortableBlasCore)
    k.unpinned_why = blas_library() + " runs " + (openblas_core().empty() ? "no OpenBLAS" : openblas_core()) +
                     " kernels and cannot switch to Haswell's (an OpenBLAS built with DYNAMIC_ARCH can)";
}

void restart_for_numerics(const std::string& numerics, char** argv) {
  const ProcessKernels& k = process_kernels();
  if (!k.restartable) return;
  const bool native = numerics == "native";
  // Native: the kernels the machine and its environment choose, which this process changed
  // (pinned at start). Portable: pinning was skipped only because native was asked at start.
  const bool restart = native ? (!k.started_native && k.unpinned_why.empty()) : k.started_native;
  if (!restart) return;
  setenv("TESTBED_NUMERICS", native ? "native" : "portable", 1);
  std::fflush(stdout);
  std::fflush(stderr);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr,
               "testbed: warning: could not start again for numerics: %s; the kernels in effect are in /numerics\n",
               numerics.c_str());
}

void use_numerics(const std::string& numerics) {
  // oneDNN's convolutions block by core count and cache sizes; without it ATen convolves by
  // unfolding into one OpenBLAS GEMM per sample, which sums in an order fixed by the shapes.
  at::globalContext().setUserEnabledMkldnn(numerics == "native");
}

bool numerics_portable() { return aten_and_blas_pinned() && !at::globalContext().userEnabledMkldnn(); }

std::string not_portable_reason(const std::string& numerics) {
  if (numerics != "portable" || numerics_portable()) return "";
  const ProcessKernels& k = process_kernels();
  if (!k.unpinned_why.empty()) return k.unpinned_why;
  return at::globalContext().userEnabledMkldnn() ? "oneDNN is on" : "the kernels in effect are not the portable ones";
}

std::vector<std::pair<std::string, std::string>> numeric_environment(const std::string& numerics) {
  const ProcessKernels& k = process_kernels();
  const bool portable = numerics_portable();
  const std::string why = not_portable_reason(numerics);
  std::string found;
  for (const auto& [name, value] : k.found) found += (found.empty() ? "" : " ") + name + "=" + value;
  std::string onednn = "off";
  if (at::globalContext().userEnabledMkldnn()) {
    onednn = "on";
    if (auto isa = library_function<int (*)()>("dnnl_get_effective_cpu_isa")) onednn += " (" + onednn_isa(isa()) + ")";
  }
  return {
      {"numerics", numerics},
      {"portable", portable ? "yes" : "no"},
      {"not_portable_because", why},
      {"aten_cpu_capability", aten_capability()},
      {"openblas_core", openblas_core().empty() ? "none" : openblas_core()},
      {"openblas_config", openblas_config()},
      {"blas_library", blas_library()},
      {"onednn", onednn},
      {"threads", std::to_string(at::get_num_threads())},
      {"libtorch_version", TORCH_VERSION},
      {"glibc_version", gnu_get_libc_version()},
      {"cpu_model", cpu_model()},
      {"cpu_features", cpu_features()},
      {"environment", found.empty() ? "none set" : found},
  };
}

}  // namespace testbed
