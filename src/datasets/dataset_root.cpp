// The default directory of downloaded datasets.

#include "rensa/datasets/dataset_root.h"

#include <cstdlib>

namespace rensa::datasets {

std::string get_dataset_root() {
  if (const char* root = std::getenv("RENSA_DATASET_ROOT"); root != nullptr && *root != '\0') return root;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.rensa/dataset";
}

}  // namespace rensa::datasets
