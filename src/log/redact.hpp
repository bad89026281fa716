// Redaction of anything that must never reach a log, a result's error text or
// an error message: card numbers, CVV/CVC, tokens, passwords, credentials.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

// Returns `text` with
//  - every occurrence of one of `secrets` (config credentials) replaced,
//  - values of sensitive fields (card_number, cvc, cvv, token, secret,
//    password, api_key, ...) in JSON ("cvc": "123") or form/header style
//    (cvc=123, Authorization: Bearer x) replaced,
//  - Luhn-valid runs of 13-19 digits (optionally grouped by single spaces or
//    dashes) replaced,
// and is UTF-8 (see utf8_clean).
std::string redact(std::string_view text, const std::vector<std::string>& secrets = {});

// The same, without a copy where none is needed: nothing when redact() would
// return `text` unchanged (no secret in it, and ASCII), else what it returns.
// For the hot paths (every log line, every provider id read) where most
// values need neither.
std::optional<std::string> redact_if_needed(std::string_view text, const std::vector<std::string>& secrets = {});

// A provider's identifier (a payment id, an event's id): nothing when it is
// one visible-ASCII token of at most 255 bytes, not only digits, holding no
// configured secret and no credential's prefix: the digits of such an id
// (ORD00000000000018) are the provider's numbering, and masked the id
// would name no payment, which could then never be looked up nor found by
// its notifications. An id of digits only is read as text (it may be a card
// number a provider echoed), and so is anything else: redact_if_needed().
std::optional<std::string> redact_identifier_if_needed(std::string_view id, const std::vector<std::string>& secrets = {});

// `text` with every byte that is not part of a well-formed UTF-8 sequence
// replaced by U+FFFD. Results, logs and the ledger are JSON, which must be
// UTF-8, while a provider's (or a proxy's) bytes may be anything.
std::string utf8_clean(std::string_view text);

// True when `digits` (only 0-9) passes the Luhn check.
bool luhn_valid(std::string_view digits);

// True when a request header looks like it carries a credential or card
// data: a name that says so (secret, password, private, token, api key,
// cvc/cvv, card, cookie, authorization, credential, in any case and with -
// or _), a value with a credential's scheme or prefix ("Bearer ...",
// "Basic ...", sk_live_..., whsec_..., tok_...), or a value that is a card
// number. A payment's own headers are kept in the ledger, which holds none.
// (A signed JWT a header carries on purpose, such as PayPal-Auth-Assertion,
// names no secret and is not refused.)
bool header_carries_secret(std::string_view name, std::string_view value);

}  // namespace payretry
