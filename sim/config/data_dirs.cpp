// Data folders: installed by scripts/install-deps.sh, never downloaded at run time.
#include "sim/config/data_dirs.h"

namespace testbed {

std::string default_data_dir(const std::string& dataset) {
  if (dataset == "fashion_mnist") return "/usr/share/datasets/fashion-mnist";
  if (dataset == "brown" || dataset == "brown_genres") return std::string(TESTBED_DATA_DIR) + "/brown";
  return "";
}

}  // namespace testbed
