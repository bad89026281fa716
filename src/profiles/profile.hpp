// A provider profile: the answers, for one provider, to the questions a safe
// retry depends on (docs/design.md "Profiles"), as data. Built-in profiles are JSON files in
// src/profiles/builtin/; users load their own or write one inline in the config.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "money_state.hpp"

namespace payretry {

enum class Verdict { success, retry, retry_after_backoff, query, fail, mismatch, in_progress };
const char* verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view s);

// What one classification rule looks at. Every present part must match.
struct Matcher {
  // Inclusive status ranges; empty = any status, or none (transport failure).
  std::vector<std::pair<int, int>> status;
  // Header name (case-insensitive) -> value (case-insensitive; "*" = present).
  std::vector<std::pair<std::string, std::string>> headers;
  // A JSON path into the body ("$.error.code", "$.errors[*].code",
  // "$.*_response.sub_code") whose string value must be one of `codes`.
  std::string code_path;
  std::vector<std::string> codes;
  // "" (a response), or a transport class: "not_sent" (nothing written),
  // "timeout", "connection_lost", "tls_verify", "malformed_2xx", "any_failure".
  std::string transport;
  bool empty() const { return status.empty() && headers.empty() && code_path.empty() && transport.empty(); }
};

struct Rule {
  Matcher when;
  Verdict verdict = Verdict::fail;
  // Whether a response matching this rule can mean the provider acted on the
  // request. Unset: yes for responses, the transport's own word otherwise.
  std::optional<bool> processed;
  std::string reason;  // short token for logs; default derived from the match
};

// Where the key (or the reference that acts as one) travels.
enum class IdentityMode {
  header,     // a request header, e.g. Idempotency-Key
  body,       // a top-level body field payretry writes or checks, e.g. Square's idempotency_key
  reference,  // the merchant reference already in the body is the identity
              // (WeChat Pay / Alipay out_trade_no); it must equal the order id
  none,       // an operation only (profile_operations.hpp): the provider
              // takes no key for it (Square's complete, PayPal's void), so a
              // re-send is safe only where the operation itself is
};

struct Identity {
  IdentityMode mode = IdentityMode::header;
  std::string name = "Idempotency-Key";  // header name, or body path ("$.idempotency_key")
  size_t min_length = 1;
  size_t max_length = 255;
  std::string charset;  // extra allowed characters besides [A-Za-z0-9]; empty = any visible ASCII
};

// What the provider does with a second request under a key (or reference) it
// has already seen. This decides whether re-sending a payment that may have
// been processed can charge it twice.
enum class ReplayKind {
  none,           // not documented: a re-send may run the payment again
  success_only,   // only 2xx answers are stored (Checkout.com): after an error
                  // that followed processing, a re-send runs the payment again
  all_answers,    // every answer once processing began, errors included (Stripe)
  current_state,  // the current state of the earlier request (PayPal)
  reference,      // the merchant reference is permanent; a duplicate is refused,
                  // never charged (WeChat Pay, Alipay)
};
const char* replay_kind_name(ReplayKind k);
std::optional<ReplayKind> parse_replay_kind(std::string_view s);

// How a payment's status can be asked for (a profile's lookup.by).
enum class LookupBy {
  none,         // the provider offers no lookup
  replay,       // the only lookup is a same-key re-send
  order_id,     // GET (or POST) by the merchant reference
  provider_id,  // GET by the provider's id, known only once an answer was read
};
const char* lookup_by_name(LookupBy b);
std::optional<LookupBy> parse_lookup_by(std::string_view s);

// What a provider status read by a lookup settles (a status_map target).
enum class StatusTarget {
  succeeded,  // SUCCEEDED
  failed,     // FAILED
  pending,    // PENDING: still running, the payment stays UNKNOWN
};
const char* status_target_name(StatusTarget t);
std::optional<StatusTarget> parse_status_target(std::string_view s);
// True when a same-key re-send can never run the payment a second time,
// whatever the earlier attempts observed (while the key is retained).
inline bool resend_always_safe(ReplayKind k) {
  return k == ReplayKind::all_answers || k == ReplayKind::current_state || k == ReplayKind::reference;
}

// How a create body travels. The caller gives a JSON document either way.
enum class Encoding {
  json,  // the document's bytes as given, Content-Type: application/json
  form,  // form fields with bracketed nesting (Stripe v1),
         // Content-Type: application/x-www-form-urlencoded; a body that is
         // already form fields is sent as given
  form_flat,  // one form field per top-level member, objects and arrays as
              // compact JSON text (Alipay's gateway: biz_content={...})
};
const char* encoding_name(Encoding e);
const char* content_type_of(Encoding e);

// How requests prove who sends them. The credentials are the config's
// ("auth"); the profile says what the provider's own SDK does.
enum class AuthScheme {
  bearer,         // Authorization: Bearer <secret key>
  basic,          // Authorization: Basic base64(user:password)
  api_key,        // the secret in a header of the provider's (Adyen: X-API-Key)
  oauth2_client_credentials,  // a token fetched with the client's id and
                              // secret, cached, renewed (PayPal)
  wechatpay_v3,   // WECHATPAY2-SHA256-RSA2048 request signatures; answers
                  // signed by the platform key and verified
  alipay_rsa2,    // RSA2 over the sorted gateway parameters; answers signed
};
const char* auth_scheme_name(AuthScheme s);

struct ProfileAuth {
  AuthScheme scheme = AuthScheme::bearer;
  std::string header;      // api_key: the header the key travels in
  std::string token_path;  // oauth2: where tokens are issued, under base_url
  // oauth2: the provider documents that a 401 proves the request was not
  // processed. A cached token can expire, or be revoked, while a request is
  // on its way, and a provider may refuse the answer after it acted; without
  // this statement the 401 counts as possibly processed, and the request is
  // sent again with a fresh token only where a same-key re-send cannot run
  // it twice (the replay kind).
  bool unauthorized_not_processed = false;
};

// Where an answer names the request it answers, and what it must name
// there: JSON path -> one placeholder ({order_id}, {merchant_id},
// {provider_id}, {key}), e.g. {"$.out_trade_no": "{order_id}"}. A provider
// signs its answer, not the request, so a genuinely signed answer to another
// order (replayed by a proxy) verifies; only these fields tell it apart.
using AnswerNames = std::vector<std::pair<std::string, std::string>>;

// How to ask the provider what really happened (docs/design.md "Query and reconcile").
struct Lookup {
  LookupBy by = LookupBy::none;
  std::string method = "GET";
  std::string path;                      // template: {order_id} {provider_id} {key} {merchant_id} {app_id}
  std::string status_path = "$.status";  // where the status lives in the answer
  std::string id_path = "$.id";
  // Provider status -> what it settles; statuses not listed stay UNKNOWN.
  std::map<std::string, StatusTarget> status_map;
  Matcher not_found;                     // what "no such payment" looks like
  // Request body template for a POST lookup ({order_id} {provider_id} {key});
  // empty = no body (Alipay's alipay.trade.query takes its reference in one).
  std::string body;
  // For a lookup by order_id: where the create body carries the reference
  // the lookup searches by ("$.reference"). Submit writes it (when absent and
  // top-level) or checks it equals the order id, so that "not found" means
  // what it says. Empty: the request carries no such reference, and "not
  // found" is never proof that no payment exists.
  std::string reference_path;
  // What a found answer must name (AnswerNames): every path present and
  // equal, else the answer settles nothing (answer_not_verified). A lookup
  // by provider_id also checks id_path against the id it asked for.
  AnswerNames names_request;
  // For a lookup that searches (by reference) and may list several
  // payments: the id of every payment the answer lists ("$.data[*].id").
  // A found answer must list exactly one; with more, which of them this
  // payment is cannot be told (another payment under the same reference,
  // declined or not, would otherwise speak for it), and the lookup settles
  // nothing. Empty: the answer describes one payment.
  std::string found_ids;
  // For an answer that lists a payment's actions rather than describing one
  // thing (Checkout.com's GET /payments/{id}/actions): where the listed
  // items are ("$[*]"). The item whose id_path is the row's own provider id
  // (an operation's, its answer's id) is the answer every other path reads;
  // an answer that lists it none or several times settles nothing.
  std::string items;
  // With items, for an operation: where each listed item carries the key
  // the operation's body carried (Checkout.com's action `reference`, which
  // the profile's operation body writes as {key}). A row that knows no id
  // yet (its answer was lost) is looked up by it: the one item carrying the
  // row's key is the answer, and teaches the row its id. A row that knows its
  // id is still looked up by the id. Empty: by id only.
  std::string item_key_path;
};

// Where a notification names something: alternatives tried in order, the
// first that yields a value wins. Each is a JSON path ("$.data.object.id")
// or a template of paths ("{$.pspReference}:{$.eventCode}") for what the
// provider names by several fields.
using WebhookField = std::vector<std::string>;

// How the provider's notifications (webhooks) are read (docs/profiles.md
// "webhook"). Verification is the scheme's (src/auth/webhook_scheme.hpp),
// with the config's secrets; the fields below are read from what verified:
// the body, each item of a batch (Adyen), WeChat Pay's decrypted resource,
// or Alipay's and Mollie's form fields as an object.
struct ProfileWebhook {
  std::string scheme;         // a scheme of webhook_schemes(); "" none: every notification is refused
  int64_t tolerance_ms = 0;   // a timestamped scheme's window; 0 the scheme's default
  WebhookField event_id;      // what makes an event itself: the same id twice is one event
  WebhookField event_type;
  WebhookField order_id;      // the merchant's reference, as the payment was submitted ({} none)
  WebhookField provider_id;   // the provider's payment id
  WebhookField status;        // the payment's status word, read through lookup.status_map
  // The idempotency key of the request that caused the event (Stripe's
  // request.idempotency_key): a failure that carries the key of an order's
  // row is that row's own payment's, even when the row never learnt its id.
  WebhookField idempotency_key;
  // When the payment the event describes was made, in Unix seconds
  // (Stripe's data.object.created). A key is proof only for a payment made
  // inside the key's window before the row (key_as_proof): a caller's own
  // key, reused once the provider forgot it, also named an older payment.
  WebhookField created_path;
  // Event type -> what it settles, before `status`; a type in neither
  // settles nothing (the event is recorded, the payment stays as it is).
  std::map<std::string, StatusTarget> events;
  // What an event must name to be this client's (JSON path -> the value):
  // "{merchant_id}" / "{account_id}" / "{app_id}" (the config's, app_id
  // Alipay's auth.alipay.app_id; skipped while the config has none) or a
  // literal. Stripe: {"$.data.object.object":
  // "payment_intent"}, Adyen: {"$.merchantAccountCode": "{merchant_id}"}.
  // An event that names another is authentic but not this client's: it is
  // acknowledged and changes nothing.
  std::vector<std::pair<std::string, std::string>> requires_names;
  // Where the create body carries the order id the event names, when the
  // caller writes it there (Stripe's metadata.order_id): submit refuses a
  // body whose value there is another order's, since that payment's events
  // would settle the other order.
  std::string reference_path;
  // Connect-style accounts under one platform (Stripe Connect): where an
  // event names the account its payment was made in (Stripe's $.account,
  // absent for the platform's own), and the header a payment names its
  // account with (Stripe-Account). An event lands only on a row whose
  // payment was made in that same account: its own submission header, or
  // else the config's (none: the platform's own). Another account's payment
  // may carry the same order id, and its success would settle an order
  // whose own payment was never charged.
  WebhookField account_path;
  std::string account_header;
  // The notification is a hint only (Mollie's classic webhook carries an id
  // and nothing else): the payment is looked up, and the lookup decides.
  bool confirm_by_lookup = false;
  // What the provider expects back once the event is stored.
  int ack_status = 200;
  std::string ack_content_type;
  std::string ack_body;
};

// One place an answer carries the provider's money word (docs/profiles.md
// "money"): a JSON path, and the words it may hold when they mean something
// there that they do not mean elsewhere (PayPal's COMPLETED is a paid
// capture but an order whose money is still to be read).
struct MoneyReader {
  std::string path;
  std::map<std::string, MoneyState> states;  // empty: the profile's money.states
};

// How the provider's words say where the money is (money_state.hpp). Readers are
// tried in order; the first whose path yields a value decides, and a word
// no map lists reads `unknown` (moves nothing). Forward only, and `failed`
// only before `paid`, are the engine's rules (money_moves), not a
// profile's: no profile can move the money back.
struct ProfileMoney {
  std::map<std::string, MoneyState> states;  // word -> state, for every reader without its own
  std::vector<MoneyReader> create;   // a create's answer (a success, or a final refusal)
  std::vector<MoneyReader> lookup;   // a found lookup's answer
  std::vector<MoneyReader> webhook;  // an event's object, after `events`
  // Event type -> state, read before `webhook` (as webhook.events is before
  // webhook.status).
  std::map<std::string, MoneyState> events;
  // A successful create whose answer carries no word (WeChat Pay's
  // prepay_id): what such an answer means. unknown: nothing.
  MoneyState created = MoneyState::unknown;
};

// Where a request body carries an amount, and in what unit (docs/profiles.md
// "amount"): read by read_amount (amount_reading.hpp).
enum class AmountFormat {
  minor,    // an integer of the currency's minor units (Stripe's 1000 for 10.00 EUR)
  decimal,  // a decimal string of major units, at most two decimals ("10.00": PayPal, Mollie, Alipay)
};
const char* amount_format_name(AmountFormat f);

struct AmountField {
  std::string path;  // a JSON path without wildcards ("$.amount.value"); "" = not given
  AmountFormat format = AmountFormat::minor;
};

// How an operation's own notifications are told apart and read
// (docs/profiles.md "operations", webhook): Adyen's CAPTURE, REFUND and
// CANCELLATION, Checkout.com's payment_refunded naming its action_id,
// Stripe's refund.updated. They are verified, and their id and type read,
// by the profile's webhook block; these say which events are this
// operation's and where they name it and its payment.
struct OperationWebhook {
  // Event type -> what it settles. A type listed PENDING lets the status
  // word decide (through the operation's status_map). Empty: no event is
  // this operation's.
  std::map<std::string, StatusTarget> events;
  WebhookField operation_id;     // the operation's own id, as its answer gave it
  WebhookField payment_id;       // its payment's provider id (the payment's row must hold it)
  WebhookField status;           // its status word
  // The key of the request that made it (Stripe's request.idempotency_key):
  // an event carrying an operation row's key is that row's, even when the
  // answer that would have named the operation was lost.
  WebhookField idempotency_key;
  // What an event must name to be this client's, as webhook.requires;
  // unless given, the profile's webhook.requires.
  std::vector<std::pair<std::string, std::string>> requires_names;
  bool requires_given = false;
};

// A capture, a refund or a cancel of an existing payment (issue 47), as
// data: how to send it safely, with its own key, window, rules and lookup
// (docs/profiles.md "operations"). The library does not send operations
// yet; this is what the engine will send them by.
struct ProfileOperation {
  std::string method = "POST";  // POST, or DELETE (Mollie cancels a payment with DELETE)
  // Template: {provider_id} and {order_id} (the parent payment's), {key}
  // (the operation's own idempotency key), {target_id}, {merchant_id}.
  std::string path;
  // Where {target_id} comes from: a JSON path over the parent's lookup
  // answer (PayPal refunds a capture, "$.purchase_units[0].payments.captures[0].id");
  // the caller may give the id instead. "" = the operation names none.
  std::string target_id;
  // Where the operation's own key travels: header, body (a path the library
  // writes, nested paths allowed: Alipay's $.biz_content.out_request_no), or
  // none. Unless identity_given, the profile's identity (resolved after
  // every layer of extends, so that a child's identity reaches it).
  Identity identity;
  bool identity_given = false;
  // What the library writes into the operation's body besides the caller's
  // fields: JSON path -> template ({provider_id} {order_id} {key}
  // {target_id} {merchant_id} and literal text), e.g. Stripe's
  // {"$.payment_intent": "{provider_id}"}.
  std::vector<std::pair<std::string, std::string>> body;
  AmountField amount;  // where the operation's body carries its amount
  // The operation's own window and replay kind; unless given, the profile's.
  std::optional<int64_t> retention_ms = int64_t(24) * 3600 * 1000;
  bool retention_given = false;
  ReplayKind replay = ReplayKind::none;
  bool replay_given = false;
  // Tried before the profile's own classify rules (which keep the generic
  // fallback behind them).
  std::vector<Rule> classify;
  // The operation's answer: where its status and its own id are, and what
  // each status settles.
  std::string status_path = "$.status";
  std::string id_path = "$.id";
  std::map<std::string, StatusTarget> status_map;
  // Its own lookup. Placeholders as in `path`, and {operation_id}: the id
  // its answer gave. by provider_id: by {operation_id}; by order_id: by what
  // is known before the first send (its key, the parent's ids); none: it
  // settles only by webhook (Adyen's modifications).
  Lookup lookup;
  // Where the money is, read from its answer (`create`), its lookup and its
  // notifications: the money state the payment reaches when the operation
  // says the word (a capture's succeeded: paid; a refund's: refunded; a
  // cancel's: failed). A word that moves nothing is not listed.
  ProfileMoney money;
  // Its own notifications, where the provider sends them (none: its lookup
  // settles it, or a person does).
  OperationWebhook webhook;
  // The money states of the payment that allow it; unless given, the
  // kind's default (operation_default_parent_states).
  std::vector<MoneyState> parent_states;
  bool parent_states_given = false;
  std::vector<std::string> notes;
};

struct Profile {
  std::string name;
  std::vector<std::string> sources;      // research tags the values come from
  Identity identity;
  std::string create_path;
  Encoding encoding = Encoding::json;
  ProfileAuth auth;
  // How long the provider honours a key; nullopt = forever (a reference).
  std::optional<int64_t> retention_ms = int64_t(24) * 3600 * 1000;
  // What a same-key re-send gets (see ReplayKind). Reconcile and resumed
  // submits re-send a possibly processed payment only when this makes it
  // safe, or when every earlier observation was one the profile retries.
  ReplayKind replay = ReplayKind::none;
  std::string replay_header = "Idempotent-Replayed";
  std::vector<std::string> request_id_headers = {"Request-Id", "X-Request-Id"};
  std::string id_path = "$.id";          // provider payment id in a create response
  // Where an answer that is not a success still names the payment it made
  // (Stripe's error.payment_intent.id): kept, so that a payment left UNKNOWN
  // can be looked up by id. Empty: errors are not read for an id.
  std::string error_id_path;
  std::string status_path = "$.status";  // provider status word in a create response
  // A success must name the payment (id_path): a 2xx without it is not the
  // answer the provider gives to a payment it made (WeChat Pay's prepay_id,
  // Alipay's trade_no), so it is settled by query instead.
  bool success_requires_id = false;
  // What a create's answer must name (AnswerNames): a success must carry
  // every path, equal; any other answer that carries one must carry it
  // equal. Else the answer is not this request's: answer_not_verified,
  // UNKNOWN, never a success nor a final failure.
  AnswerNames names_request;
  // Ordered; the first match decides. The generic defaults (docs/design.md "Verdicts") follow
  // every profile's own rules.
  std::vector<Rule> classify;
  Lookup lookup;
  ProfileWebhook webhook;
  ProfileMoney money;
  // Where a create's body carries its amount ("" path: not read).
  AmountField amount;
  // "capture", "refund", "cancel" -> how each is sent; none for a provider
  // whose profile does not say.
  std::map<std::string, ProfileOperation> operations;
  std::string extends;                   // the built-in this profile derives from ("" for generic)
  std::vector<std::string> notes;        // what is undocumented, what was chosen and why
};

// The built-in profile `name` (with the generic defaults folded in), or
// nullopt. Throws ProfileError if a built-in file is broken (a build bug).
std::optional<Profile> builtin_profile(std::string_view name);
std::vector<std::string> builtin_profile_names();

// Parses a profile object (JSON text). An "extends" member names a built-in
// profile whose fields the object overrides. Throws ProfileError naming the
// bad field ("profile.classify[2].when.status: ...").
class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
Profile parse_profile(std::string_view json);

}  // namespace payretry
