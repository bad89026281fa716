#include "base64.hpp"

#include <openssl/evp.h>

#include <cctype>

namespace payretry {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 != 0) return false;
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) return false;
  if (text.empty()) return true;
  std::string buf(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  // EVP_DecodeBlock counts padding as zero bytes.
  size_t len = static_cast<size_t>(n);
  if (text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  buf.resize(len);
  out = std::move(buf);
  return true;
}

}  // namespace payretry
