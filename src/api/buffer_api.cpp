// buffer.h: pay_buf, the JSON text the library writes for its caller, and
// its release.
#include <cstdlib>
#include <cstring>

#include "api_internal.hpp"

namespace payretry::capi {

int fill_buf(pay_buf* out, const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return set_error(PAY_ENOMEM, "out of memory");
  std::memcpy(p, s.c_str(), s.size() + 1);
  out->ptr = p;
  out->size = s.size();
  return PAY_OK;
}

}  // namespace payretry::capi

extern "C" {

void pay_buf_dispose(pay_buf* buf) {
  if (!buf) return;
  std::free(buf->ptr);
  buf->ptr = nullptr;
  buf->size = 0;
}

}  // extern "C"
