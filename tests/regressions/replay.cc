// Replays the crash inputs fuzzing found (tests/regressions/<target>-<bug>) through the same
// harness code as the libFuzzer targets (fuzz/harness.cc), in the normal build, with whatever
// sanitizers that build uses. A regression shows up as a crash, an abort or a ctest timeout.
//
// usage: idem_fuzz_replay FILE_OR_FOLDER...
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/harness.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& entry : fs::directory_iterator(argv[i])) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.emplace_back(argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  int replayed = 0;
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    void (*target)(const uint8_t*, size_t) = nullptr;
    if (name.rfind("fuzz_model-", 0) == 0) target = idem::fuzz::FuzzModel;
    if (name.rfind("fuzz_graph-", 0) == 0) target = idem::fuzz::FuzzGraph;
    if (name.rfind("fuzz_value-", 0) == 0) target = idem::fuzz::FuzzValue;
    if (name.rfind("fuzz_backend_case-", 0) == 0) target = idem::fuzz::FuzzBackendCase;
    if (target == nullptr) continue;  // README, CMakeLists.txt, scripts
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("replay %s (%zu bytes)\n", name.c_str(), bytes.size());
    std::fflush(stdout);
    target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ++replayed;
  }
  std::printf("%d regression inputs replayed without a crash\n", replayed);
  return replayed > 0 ? 0 : 1;
}
