#include "webhook_sender.hpp"

#include "operations.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

#include "faults.hpp"
#include "http_conn.hpp"
#include "sockets.hpp"

namespace payretry_sim {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kMs = 1000000;

}  // namespace

bool parse_webhook_faults(std::string_view text, WebhookFaults* out, std::string* error) {
  WebhookFaults f = *out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string name(item.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : item.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end) {
      *error = "--webhook-faults wants NAME=VALUE items, got " + std::string(item);
      return false;
    }
    if (name == "delay_ms") {
      if (v < 0 || v > 3600 * 1000 || v != static_cast<int>(v)) {
        *error = "--webhook-faults delay_ms must be a whole number of ms up to 3600000";
        return false;
      }
      f.delay_ms = static_cast<int>(v);
      continue;
    }
    double* slot = name == "dup"       ? &f.dup
                   : name == "reorder" ? &f.reorder
                   : name == "forge"   ? &f.forge
                   : name == "replay"  ? &f.replay
                   : name == "stale"   ? &f.stale
                   : name == "early"   ? &f.early
                                       : nullptr;
    if (!slot) {
      *error = "--webhook-faults knows dup reorder delay_ms forge replay stale early, not " + name;
      return false;
    }
    if (!(v >= 0 && v <= 1)) {
      *error = "--webhook-faults " + name + " must be a probability between 0 and 1";
      return false;
    }
    *slot = v;
  }
  *out = f;
  return true;
}

WebhookSender::WebhookSender(WebhookSettings settings, WebhookFaults faults, uint64_t seed)
    : settings_(std::move(settings)), seed_(seed), faults_(faults) {
  // http://host[:port][/path]; the host an IPv4 address or localhost: the receivers are local.
  std::string_view rest = std::string_view(settings_.url).substr(std::string_view("http://").size());
  const std::size_t slash = rest.find('/');
  path_ = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  host_ = std::string(rest.substr(0, slash));
  std::string name = host_;
  const std::size_t colon = host_.rfind(':');
  if (colon != std::string::npos) {
    name = host_.substr(0, colon);
    char* end = nullptr;
    const long port = std::strtol(host_.c_str() + colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535) throw std::invalid_argument("bad port in --webhook-url " + settings_.url);
    port_ = static_cast<uint16_t>(port);
  }
  in_addr ip{};
  if (inet_pton(AF_INET, name == "localhost" ? "127.0.0.1" : name.c_str(), &ip) != 1) {
    throw std::invalid_argument("--webhook-url must name an IPv4 address or localhost: " + settings_.url);
  }
  addr_ = ip.s_addr;
  thread_ = std::thread([this] { run(); });
}

WebhookSender::~WebhookSender() { stop(); }

void WebhookSender::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WebhookSender::set_faults(const WebhookFaults& faults) {
  std::lock_guard<std::mutex> lk(mu_);
  faults_ = faults;
}

WebhookFaults WebhookSender::faults() const {
  std::lock_guard<std::mutex> lk(mu_);
  return faults_;
}

void WebhookSender::reset() {
  std::lock_guard<std::mutex> lk(mu_);
  log_.clear();
  heap_.clear();
  last_real_.reset();
  ++generation_;
}

bool WebhookSender::decide(const PaymentEvent& e, std::string_view fault, double p) const {
  if (p <= 0) return false;
  // Pure in (seed, order, payment, fault): the same run makes the same choices, whatever the
  // threads' interleaving, and one fault's choice says nothing of another's. An operation's
  // notifications choose apart from their payment's and from each other (a payment's choices
  // stay as they were).
  uint64_t h = splitmix64(seed_ ^ splitmix64(fnv1a64(e.order_id) ^ splitmix64(e.number)) ^ fnv1a64(fault));
  if (e.op_number) h = splitmix64(h ^ splitmix64(e.op_number) ^ (static_cast<uint64_t>(e.op_phase) << 56));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) < p;
}

WebhookSender::Delivery WebhookSender::queue(int64_t due_ns, Record record, Notice n, bool retries) {
  log_.push_back(std::move(record));
  Delivery d;
  d.due_ns = due_ns;
  d.seq = seq_++;
  d.record = log_.size() - 1;
  d.retries = retries;
  d.generation = generation_;
  d.notice = std::move(n);
  heap_.push_back(d);
  std::push_heap(heap_.begin(), heap_.end(), Later());
  return d;
}

bool WebhookSender::payment_final(const Profile& p, const PaymentEvent& e) {
  if (!sends_notice(p, e)) return false;
  const WebhookFaults f = faults();
  const bool early = decide(e, "early", f.early);
  const bool reorder = decide(e, "reorder", f.reorder);
  const bool dup = decide(e, "dup", f.dup);
  const bool forge = decide(e, "forge", f.forge);
  const bool stale = has_variant(p, NoticeVariant::stale) && decide(e, "stale", f.stale);
  const bool replay = decide(e, "replay", f.replay);
  // Built (and signed) here, outside the lock: RSA signing is the slow part.
  const int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  Notice real, forged, old;
  try {
    real = build_notice(p, settings_, e, seed_, NoticeVariant::real, now_s);
    if (forge) forged = build_notice(p, settings_, e, seed_, NoticeVariant::forged, now_s);
    if (stale) old = build_notice(p, settings_, e, seed_, NoticeVariant::stale, now_s);
  } catch (const std::exception&) {
    return false;  // a profile switched at run time without its settings: nothing to send
  }
  Record r;
  r.order_id = e.order_id;
  // An operation's notification is about the operation: its own id (Adyen's modification
  // pspReference).
  r.provider_id = e.op_number ? operation_id(p, static_cast<OpKind>(e.op_kind), e.op_number)
                              : format_id(p.payment_id, e.number);
  r.event_id = real.event_id;
  r.type = real.type;
  r.kind = "real";
  r.early = early;
  r.reordered = reorder;
  const int64_t now = steady_ns();
  const int64_t due = (early ? now : now + (f.delay_ms + (reorder ? kReorderMs : 0)) * kMs) +
                      static_cast<int64_t>(e.after_ms) * kMs;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return false;
    // The earlier notification a replay sends again, before this one becomes the latest.
    std::optional<Delivery> earlier = last_real_;
    last_real_ = queue(due, r, real, true);
    if (replay) {
      Record rr = earlier && earlier->generation == generation_ ? log_[earlier->record] : r;
      rr.kind = "replay";
      rr.attempts = 0;
      rr.last_status = 0;
      rr.delivered = false;
      rr.early = rr.reordered = false;
      queue(due + kReplayAfterMs * kMs, rr, earlier ? earlier->notice : real, false);
    }
    if (forge) {
      Record fr = r;
      fr.kind = "forged";
      fr.event_id = forged.event_id;
      queue(due, fr, std::move(forged), false);
    }
    if (stale) {
      Record sr = r;
      sr.kind = "stale";
      queue(due, sr, std::move(old), false);
    }
    if (dup) {
      Record dr = r;
      dr.kind = "dup";
      queue(due + kDupAfterMs * kMs, dr, std::move(real), true);
    }
  }
  cv_.notify_all();
  return early;
}

void WebhookSender::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopping_) {
    if (heap_.empty()) {
      cv_.wait(lk);
      continue;
    }
    const int64_t now = steady_ns();
    if (heap_.front().due_ns > now) {
      cv_.wait_for(lk, std::chrono::nanoseconds(heap_.front().due_ns - now));
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    Delivery d = std::move(heap_.back());
    heap_.pop_back();
    lk.unlock();
    const int status = post(d.notice);
    lk.lock();
    if (d.generation != generation_ || d.record >= log_.size()) continue;  // reset meanwhile
    Record& r = log_[d.record];
    ++r.attempts;
    r.last_status = status;
    r.delivered = status >= 200 && status <= 299;
    // A 2xx ends it; anything else is sent again later, a few times, as the providers do.
    if (!r.delivered && d.retries && r.attempts < kMaxAttempts) {
      d.due_ns = steady_ns() + (static_cast<int64_t>(kFirstBackoffMs) << (r.attempts - 1)) * kMs;
      d.seq = seq_++;
      heap_.push_back(std::move(d));
      std::push_heap(heap_.begin(), heap_.end(), Later());
    }
  }
}

int WebhookSender::post(const Notice& n) const {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return 0;
  // A receiver that hangs costs the queue two seconds, not the sender for ever.
  timeval tv{2, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port_);
  sa.sin_addr.s_addr = addr_;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) return 0;
  std::string request = "POST " + path_ + " HTTP/1.1\r\nHost: " + host_ +
                        "\r\nUser-Agent: payretry-sim-webhooks\r\nContent-Type: " + n.content_type +
                        "\r\nContent-Length: " + std::to_string(n.body.size()) + "\r\n";
  for (const auto& [name, value] : n.headers) request += name + ": " + value + "\r\n";
  request += "Connection: close\r\n\r\n" + n.body;
  for (std::size_t off = 0; off < request.size();) {
    const ssize_t w = ::send(fd.get(), request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (w <= 0) return 0;
    off += static_cast<std::size_t>(w);
  }
  // The status line is all that counts; the rest is the receiver's business.
  std::string head;
  char buf[1024];
  while (head.find("\r\n") == std::string::npos && head.size() < 8192) {
    const ssize_t r = ::recv(fd.get(), buf, sizeof buf, 0);
    if (r <= 0) break;
    head.append(buf, static_cast<std::size_t>(r));
  }
  if (head.compare(0, 7, "HTTP/1.") != 0 || head.size() < 12 || head[8] != ' ') return 0;
  const int status = std::atoi(head.substr(9, 3).c_str());
  return status >= 100 && status <= 599 ? status : 0;
}

std::string WebhookSender::log_json() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string out = R"({"url":)";
  append_json_string(out, settings_.url);
  auto number = [&out](const char* name, double v) {
    out.append(",\"").append(name).append("\":");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    out.append(buf);
  };
  out.append(R"(,"faults":{"delay_ms":)").append(std::to_string(faults_.delay_ms));
  number("dup", faults_.dup);
  number("reorder", faults_.reorder);
  number("forge", faults_.forge);
  number("replay", faults_.replay);
  number("stale", faults_.stale);
  number("early", faults_.early);
  out.append(R"(},"notifications":[)");
  for (std::size_t i = 0; i < log_.size(); ++i) {
    const Record& r = log_[i];
    if (i) out.push_back(',');
    out.append(R"({"order_id":)");
    append_json_string(out, r.order_id);
    out.append(R"(,"provider_id":)");
    append_json_string(out, r.provider_id);
    out.append(R"(,"event_id":)");
    append_json_string(out, r.event_id);
    out.append(R"(,"type":)");
    append_json_string(out, r.type);
    out.append(R"(,"kind":")").append(r.kind);
    out.append(R"(","attempts":)").append(std::to_string(r.attempts));
    out.append(R"(,"last_status":)").append(std::to_string(r.last_status));
    out.append(R"(,"delivered":)").append(r.delivered ? "true" : "false");
    out.append(R"(,"early":)").append(r.early ? "true" : "false");
    out.append(R"(,"reordered":)").append(r.reordered ? "true" : "false");
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

}  // namespace payretry_sim
