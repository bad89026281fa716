#include "json_lite.hpp"

#include <charconv>

namespace payretry_sim {

namespace {

constexpr int kMaxDepth = 128;

class Scanner {
 public:
  explicit Scanner(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool document(PaymentFields* out) {
    ws();
    if (p_ == end_ || *p_ != '{') return false;
    if (!object(0, out)) return false;
    ws();
    return p_ == end_;
  }

 private:
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  static void put_utf8(std::string* s, uint32_t cp) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool hex4(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return false;
      r = r * 16 + static_cast<uint32_t>(h);
    }
    p_ += 4;
    *v = r;
    return true;
  }

  // At '"'. Sets *raw to the contents without quotes; *escaped when it holds escapes.
  // With `decoded`, escapes are decoded into it.
  bool string(std::string_view* raw, bool* escaped, std::string* decoded) {
    ++p_;
    const char* start = p_;
    *escaped = false;
    // Fast path: no escapes, the raw bytes are the value.
    while (p_ != end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') break;
      ++p_;
    }
    if (decoded) decoded->assign(start, static_cast<std::size_t>(p_ - start));
    while (p_ != end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *raw = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c != '\\') {
        if (decoded) decoded->push_back(static_cast<char>(c));
        ++p_;
        continue;
      }
      *escaped = true;
      if (++p_ == end_) return false;
      const char e = *p_++;
      char out;
      switch (e) {
        case '"': out = '"'; break;
        case '\\': out = '\\'; break;
        case '/': out = '/'; break;
        case 'b': out = '\b'; break;
        case 'f': out = '\f'; break;
        case 'n': out = '\n'; break;
        case 'r': out = '\r'; break;
        case 't': out = '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return false;
          }
          if (decoded) put_utf8(decoded, cp);
          continue;
        }
        default:
          return false;
      }
      if (decoded) decoded->push_back(out);
    }
    return false;
  }

  bool number(double* value) {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      return false;
    }
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (value) {
      auto r = std::from_chars(start, p_, *value);
      if (r.ec == std::errc::result_out_of_range) *value = start[0] == '-' ? -1e308 : 1e308;
      else if (r.ec != std::errc()) return false;
    }
    return true;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() ||
        std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  bool value(int depth) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return object(depth + 1, nullptr);
      case '[': return array(depth + 1);
      case '"': {
        std::string_view raw;
        bool escaped;
        return string(&raw, &escaped, nullptr);
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number(nullptr);
    }
  }

  bool array(int depth) {
    if (depth > kMaxDepth) return false;
    ++p_;
    ws();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      ws();
      if (!value(depth)) return false;
      ws();
      if (p_ == end_) return false;
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }

  // `out` is set only for the top-level object.
  bool object(int depth, PaymentFields* out) {
    if (depth > kMaxDepth) return false;
    ++p_;
    ws();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      ws();
      if (p_ == end_ || *p_ != '"') return false;
      std::string_view name;
      bool escaped;
      // Top-level names are decoded so "order\u005fid" matches too, as in any JSON parser.
      if (!string(&name, &escaped, out ? &name_buf_ : nullptr)) return false;
      if (escaped) name = name_buf_;
      ws();
      if (p_ == end_ || *p_++ != ':') return false;
      ws();
      if (p_ == end_) return false;
      bool handled = false;
      if (out) {
        if (name == "order_id" && !seen_order_) {
          seen_order_ = true;
          out->order_id_present = true;
          if (*p_ == '"') {
            std::string_view raw;
            bool esc;
            if (!string(&raw, &esc, &out->order_id_buf)) return false;
            out->has_order_id = true;
            out->order_id = esc ? std::string_view(out->order_id_buf) : raw;
            handled = true;
          }
        } else if (name == "currency" && !seen_currency_) {
          seen_currency_ = true;
          out->has_currency = true;
          if (*p_ == '"') {
            std::string_view raw;
            bool esc;
            if (!string(&raw, &esc, &out->currency_buf)) return false;
            out->currency_is_string = true;
            out->currency = esc ? std::string_view(out->currency_buf) : raw;
            handled = true;
          }
        } else if (name == "amount" && !seen_amount_) {
          seen_amount_ = true;
          out->amount_present = true;
          if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) {
            if (!number(&out->amount)) return false;
            out->has_amount = true;
            handled = true;
          }
        }
      }
      if (!handled && !value(depth)) return false;
      ws();
      if (p_ == end_) return false;
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      if (*p_++ != ',') return false;
    }
  }

  const char* p_;
  const char* end_;
  bool seen_order_ = false;
  bool seen_currency_ = false;
  bool seen_amount_ = false;
  std::string name_buf_;
};

}  // namespace

bool scan_payment_json(std::string_view body, PaymentFields* out) {
  Scanner s(body);
  return s.document(out);
}

}  // namespace payretry_sim
