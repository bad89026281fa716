// Rewrites docs/config.md's generated section, docs/config.schema.json and
// python/payretry/_config.py from the parser's key table, or (--check) says
// whether they are current.
//   config_reference_tool --write SOURCE_DIR
//   config_reference_tool --check SOURCE_DIR
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "config_reference.hpp"

int main(int argc, char** argv) {
  using namespace payretry;
  if (argc != 3 || (std::strcmp(argv[1], "--write") != 0 && std::strcmp(argv[1], "--check") != 0)) {
    std::fputs("usage: config_reference_tool --write|--check SOURCE_DIR\n", stderr);
    return 2;
  }
  const bool write = std::strcmp(argv[1], "--write") == 0;
  const std::string md_path = std::string(argv[2]) + "/docs/config.md";
  const std::string schema_path = std::string(argv[2]) + "/docs/config.schema.json";
  const auto md = config_reference::read(md_path);
  if (!md) {
    std::fprintf(stderr, "cannot read %s\n", md_path.c_str());
    return 1;
  }
  const auto new_md = config_reference::with_generated_section(*md);
  if (!new_md) {
    std::fprintf(stderr, "%s: the GENERATED markers are missing\n", md_path.c_str());
    return 1;
  }
  const std::string schema = config_json_schema();
  const auto old_schema = config_reference::read(schema_path);
  const std::string types_path = std::string(argv[2]) + "/python/payretry/_config.py";
  const std::string types = config_python_types();
  const auto old_types = config_reference::read(types_path);
  if (!write) {
    int stale = 0;
    if (*new_md != *md) stale += std::fprintf(stderr, "%s is stale\n", md_path.c_str()) > 0;
    if (!old_schema || *old_schema != schema) stale += std::fprintf(stderr, "%s is stale\n", schema_path.c_str()) > 0;
    if (!old_types || *old_types != types) stale += std::fprintf(stderr, "%s is stale\n", types_path.c_str()) > 0;
    return stale ? 1 : 0;
  }
  std::ofstream(md_path, std::ios::binary | std::ios::trunc) << *new_md;
  std::ofstream(schema_path, std::ios::binary | std::ios::trunc) << schema;
  std::ofstream(types_path, std::ios::binary | std::ios::trunc) << types;
  std::printf("wrote %s, %s and %s\n", md_path.c_str(), schema_path.c_str(), types_path.c_str());
  return 0;
}
