// Order ids are the caller's data, and lookups put them into a URL: they are
// percent-encoded there, never able to add a path segment, a query parameter
// or a header line.
#include <atomic>
#include <string>

#include "hostile_client.hpp"
#include "hostile_server.hpp"

namespace payretry_hostile {
namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

TEST(HostileLookup, an_order_id_with_slash_question_mark_and_percent_is_encoded_in_the_lookup_path) {
  const std::string order = "o/1?x=%41&y#z";
  HostileServer server([](Conn& c, const Request& q, const std::atomic<bool>&) {
    // The create gets a 500 (checkout.com: settle by query); the lookup finds nothing.
    c.write(q.head.rfind("POST", 0) == 0 ? response(500, "{}") : response(404, "{}"));
  });
  Client client = make_client(config_for(server.url(), "checkout_com"));
  Result created = submit(client.get(), order);
  ASSERT_EQ(pay_result_outcome(created.get()), PAY_OUTCOME_UNKNOWN);

  pay_result* raw = nullptr;
  ASSERT_EQ(pay_query(&raw, client.get(), order.c_str()), PAY_OK) << pay_error_last()->message;
  Result queried(raw);
  expect_clean_json(queried.get());

  const auto reqs = server.requests();
  ASSERT_GE(reqs.size(), 2u);
  const std::string target = reqs.back().target();
  const std::string prefix = "/payments?reference=";
  ASSERT_EQ(target.rfind(prefix, 0), 0u) << target;
  const std::string value = target.substr(prefix.size());
  EXPECT_EQ(value.find_first_of("/?&=#"), std::string::npos) << "unencoded delimiter in " << target;
  EXPECT_EQ(percent_decode(value), order) << target;
}

TEST(HostileLookup, an_order_id_with_cr_or_lf_is_invalid_input_and_nothing_is_sent) {
  HostileServer server([](Conn& c, const Request&, const std::atomic<bool>&) { c.write(response(500, "{}")); });
  Client client = make_client(config_for(server.url(), "checkout_com"));
  for (const std::string order : {"o1\r\nX-Injected: 1", "o1\nGET /admin", "o1\r"}) {
    const std::string body = body_for("o1");
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, client.get(), order.c_str(), body.data(), body.size(), nullptr), PAY_EINVALID);
    EXPECT_EQ(r, nullptr);
    pay_result_free(r);
    r = nullptr;
    const int rc = pay_query(&r, client.get(), order.c_str());
    EXPECT_TRUE(rc == PAY_EINVALID || rc == PAY_ENOTFOUND) << pay_strerror(rc);
    pay_result_free(r);
  }
  EXPECT_TRUE(server.requests().empty()) << "a request went out for an order id with CR/LF";
}

}  // namespace
}  // namespace payretry_hostile
