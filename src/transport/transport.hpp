// Transport moves bytes and reports what happened to them. It knows nothing
// of payments, keys or ledgers (docs/design.md "Layers").
#pragma once
#include "http.hpp"

namespace payretry {

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends one request (a POST, or a GET for lookups). Never throws for
  // network conditions: they are results.
  virtual TransportResult post(const HttpRequest& request) = 0;
};

}  // namespace payretry
