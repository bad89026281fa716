// Every key the client config accepts, as one table: the parser (config.cpp)
// takes from it which keys are valid at each level and every integer's range,
// and docs/config.md's reference section and docs/config.schema.json are
// generated from it (tests/unit/config_reference_tool.cpp), so that the
// documentation, the schema and the parser cannot disagree.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

enum class ConfigKeyType {
  string,
  integer,
  boolean,
  object,            // its keys are the table's entries below it
  string_or_object,  // "ledger": a URL or {"url": ...}; "provider": a name, a file or a profile
  string_map,        // "headers": any names, string values
};
const char* config_key_type_name(ConfigKeyType t);

enum ConfigKeyFlag : unsigned {
  kKeyRequired = 1,   // required in its parent object (for an indirect key: in one of its forms)
  kKeyIndirect = 2,   // may also be given as NAME_env (an environment variable's name) or NAME_file (a path)
  kKeyNoInline = 4,   // only as NAME_env or NAME_file (PEM keys)
  kKeySecret = 8,     // a credential: never logged, never in an error message
  kKeyNullable = 16,  // null means the default
};

struct ConfigKey {
  std::string_view path;  // "retry.max_attempts"; a level's keys share its prefix
  ConfigKeyType type;
  unsigned flags;
  int64_t min;                    // integers: the inclusive range
  int64_t max;
  std::string_view choices;       // a string from a fixed set: "debug|info|warn|error"
  std::string_view default_text;  // as a reader sees it: "4", "\"generic\"", "the profile's"; "" = none
  std::string_view example;       // one valid JSON value (for NAME_env / NAME_file keys: the inline form's)
  std::string_view doc;

  bool has(unsigned f) const { return (flags & f) != 0; }
};

// The whole table, parents before their children.
const std::vector<ConfigKey>& config_keys();

// The entry for `path` ("retry.deadline_ms"); std::logic_error for a path
// the table lacks (a bug in the parser, which only asks for its own keys).
const ConfigKey& config_key(std::string_view path);

// The same, or nullptr for a path the table lacks ("headers.X-Foo").
const ConfigKey* find_config_key(std::string_view path);

// The member names valid directly in the object at `parent` ("" for the top
// level, "auth.basic"), indirect keys in every form they take.
std::vector<std::string> config_names_at(std::string_view parent);

// docs/config.md's generated section (Markdown tables, one per level).
std::string config_reference_markdown();

// python/payretry/_config.py: the config as TypedDicts (ClientConfig and one
// per nested object), for type checkers.
std::string config_python_types();

// docs/config.schema.json (JSON Schema draft 2020-12).
std::string config_json_schema();

}  // namespace payretry
