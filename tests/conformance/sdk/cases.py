"""The one payment every side sends, per built-in profile: the same order id,
amount, currency and idempotency key (or merchant reference), and the same
test credentials (tests/keys/README.md). The SDK clients (clients/*.py) build
their SDK calls from these values; runner.py gives payretry the same payment
as the JSON document its profile expects (payretry_body) and the matching
config (payretry_auth)."""
import os

ORDER_ID = "sdkconf_1042"  # WeChat: 6-32 of [A-Za-z0-9_-|*]; Alipay: letters, digits, _
IDEMPOTENCY_KEY = "4f9c1f3e-8a52-4c1b-9d7e-2b6a0c3e5f81"  # fits Square's 45, Adyen's 64
AMOUNT_MINOR = 1000
AMOUNT_MAJOR = "10.00"

# Credentials. Static API keys are made up, in each provider's key format (the
# SDKs validate the shape: checkout-sdk ^sk_(sbox_)?[a-z2-7]{26}.., Mollie ^test_\w+).
STRIPE_KEY = "sk_test_payretrysdkconformance0001"
ADYEN_API_KEY = "AQEpayretrySdkConformanceTestKey0001"
SQUARE_TOKEN = "EAAAEpayretrySdkConformanceTestToken0001"
CHECKOUT_SECRET_KEY = "sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e"
MOLLIE_API_KEY = "test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM"
PAYPAL_CLIENT_ID = "test-client-id"
PAYPAL_CLIENT_SECRET = "test-client-secret"
WECHAT_MCHID = "1900000109"
WECHAT_SERIAL_NO = "3775B6A45ACD588826D15E583A95F5DD3F3B4DD8"
WECHAT_PLATFORM_KEY_ID = "PUB_KEY_ID_0119000001092026120200000000"
WECHAT_APPID = "wxd678efh567hg6787"
WECHAT_APIV3_KEY = "payretrysdkconformanceapiv3key32"  # 32 bytes; only for callbacks, unused here
WECHAT_OPENID = "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"
WECHAT_NOTIFY_URL = "https://shop.example/wxpay/notify"
ALIPAY_APP_ID = "2021000000000001"
ALIPAY_AUTH_CODE = "28763443825664394"  # the buyer's payment code (scene bar_code)

KEYS_DIR_DEFAULT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "keys"))

PROFILES = ["stripe", "adyen", "paypal", "square", "checkout_com", "mollie", "wechatpay_v3", "alipay"]

# Where each profile's idempotency key travels, as the provider defines it:
# ("header", name) | ("body", json path) | ("reference", json path: the merchant
# reference is the identity, no key).
IDENTITY = {
    "stripe": ("header", "Idempotency-Key"),
    "adyen": ("header", "Idempotency-Key"),
    "paypal": ("header", "PayPal-Request-Id"),
    "square": ("body", "idempotency_key"),
    "checkout_com": ("header", "Cko-Idempotency-Key"),
    "mollie": ("header", "Idempotency-Key"),
    "wechatpay_v3": ("reference", "out_trade_no"),
    "alipay": ("reference", "biz_content.out_trade_no"),
}

# Profiles whose provider has a lookup the SDK offers (Adyen has none).
HAS_LOOKUP = {p: p != "adyen" for p in PROFILES}


def payretry_body(profile, order=ORDER_ID, variant="paid"):
    """The caller's JSON document for `payretry submit` (same payment as the SDK's).
    variant "held": the provider's own fields for a payment only authorized, to
    be captured or canceled later (docs/simulator.md "Where the money is")."""
    o = order
    held = variant == "held"
    if profile == "stripe":
        b = {"amount": AMOUNT_MINOR, "currency": "usd", "metadata": {"order_id": o}}
        if held:
            b.update({"confirm": True, "payment_method": "pm_card_visa", "capture_method": "manual"})
        return b
    if profile == "adyen":
        return {"amount": {"value": AMOUNT_MINOR, "currency": "EUR"}, "reference": o,
                "merchantAccount": "PayretryTestMerchant",
                "paymentMethod": {"type": "scheme", "encryptedCardNumber": "test_4111111111111111",
                                  "encryptedExpiryMonth": "test_03", "encryptedExpiryYear": "test_2030",
                                  "encryptedSecurityCode": "test_737"},
                "returnUrl": "https://shop.example/return"}
    if profile == "paypal":
        return {"intent": "AUTHORIZE" if held else "CAPTURE",
                "purchase_units": [{"reference_id": o, "amount": {"currency_code": "USD", "value": AMOUNT_MAJOR}}]}
    if profile == "square":
        # No idempotency_key: payretry writes --key into the body (its profile's identity).
        return {"source_id": "cnon:card-nonce-ok", "amount_money": {"amount": AMOUNT_MINOR, "currency": "USD"},
                "reference_id": o}
    if profile == "checkout_com":
        b = {"source": {"type": "token", "token": "tok_4gzeau5o2uqubbk6fufs3m7p54"},
             "amount": AMOUNT_MINOR, "currency": "GBP", "reference": o}
        if held:
            b["capture"] = False
        return b
    if profile == "mollie":
        b = {"amount": {"currency": "EUR", "value": AMOUNT_MAJOR}, "description": f"Order {o}",
             "redirectUrl": "https://shop.example/return", "metadata": {"order_id": o}}
        if held:
            b["captureMode"] = "manual"
        return b
    if profile == "wechatpay_v3":
        return {"appid": WECHAT_APPID, "mchid": WECHAT_MCHID, "description": f"Order {o}", "out_trade_no": o,
                "notify_url": WECHAT_NOTIFY_URL, "amount": {"total": AMOUNT_MINOR, "currency": "CNY"},
                "payer": {"openid": WECHAT_OPENID}}
    if profile == "alipay":
        return {"biz_content": {"out_trade_no": o, "scene": "bar_code", "auth_code": ALIPAY_AUTH_CODE,
                                "subject": f"Order {o}", "total_amount": AMOUNT_MAJOR}}
    raise KeyError(profile)


# ---- operations ---------------------------------------------------------------------------------
#
# Each side runs the same plan in one session (one simulator, one SDK client
# process): payments A (ORDER_ID), B and C are created, and captured, refunded
# or canceled with the amounts below. Steps:
#   ("create", P, variant)   a payment; variant "paid" or "held"
#   ("lookup", P)            the payment's lookup (payretry: its row set UNKNOWN, then `query`)
#   ("pay", P)               the customer pays P at the simulator (POST /__admin/customer),
#                            not through the recorder: a held Mollie payment is open until then
#   (KIND, P, amount)        capture / refund / cancel of P (amount in the provider's units
#                            as payretry's --amount takes them; None for a cancel)
#   ("refused", P, KIND)     an operation the provider has and this version of payretry
#                            refuses before any byte (identity none, or not a POST): payretry
#                            must refuse it with nothing sent; the SDK is not asked
ORDERS = {"A": ORDER_ID, "B": "sdkconf_1043", "C": "sdkconf_1044"}
CREATE_KEYS = {"A": IDEMPOTENCY_KEY, "B": "7d0c2a94-31e6-4b7f-a0d5-5c81e9b2f4a3",
               "C": "b35e8f10-9c47-4d2a-8e6b-0f1a7c3d9e52"}
REFUND = 400   # minor units (payretry's --amount for every profile: decimal profiles read it as hundredths)
CAPTURE = 600

PLANS = {
    # Stripe: A paid at once and partly refunded; B held and partly captured; C held and canceled.
    "stripe": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
               ("create", "B", "held"), ("capture", "B", CAPTURE),
               ("create", "C", "held"), ("cancel", "C", None)],
    # Adyen: every authorised payment is held (the simulator's account captures by hand):
    # A captured in part, then refunded in part; B canceled.
    "adyen": [("create", "A", "paid"), ("capture", "A", CAPTURE), ("refund", "A", REFUND),
              ("create", "B", "paid"), ("cancel", "B", None)],
    # PayPal: the capture, refund and void name a target (the authorization, then the capture),
    # given to payretry with --target-id: B held, captured in part and refunded in part; C held
    # and voided.
    "paypal": [("create", "A", "paid"), ("lookup", "A"),
               ("create", "B", "held"), ("capture", "B", CAPTURE), ("refund", "B", REFUND),
               ("create", "C", "held"), ("cancel", "C", None)],
    # Square: complete and cancel carry no key in the profile: refused.
    "square": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
               ("refused", "A", "capture"), ("refused", "A", "cancel")],
    "checkout_com": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
                     ("create", "B", "held"), ("capture", "B", CAPTURE),
                     ("create", "C", "held"), ("cancel", "C", None)],
    # Mollie: a manual-capture payment is open until its customer pays, then authorized;
    # its cancel is a DELETE: refused.
    "mollie": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
               ("create", "B", "held"), ("pay", "B"), ("lookup", "B"), ("capture", "B", CAPTURE),
               ("refused", "A", "cancel")],
    # WeChat Pay and Alipay: no capture (paid as the customer pays); close carries no key: refused.
    "wechatpay_v3": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
                     ("refused", "A", "cancel")],
    "alipay": [("create", "A", "paid"), ("lookup", "A"), ("refund", "A", REFUND),
               ("refused", "A", "cancel")],
}

# Where each operation's own key travels, as the provider defines it (header
# name, or the body path payretry writes it at); the create's header otherwise.
OP_IDENTITY = {
    "square": ("body", "idempotency_key"),
    "wechatpay_v3": ("body", "out_refund_no"),
    "alipay": ("body", "biz_content.out_request_no"),
}


def op_identity(profile, kind):
    return OP_IDENTITY.get(profile, IDENTITY[profile])


def major(minor):
    return f"{minor // 100}.{minor % 100:02d}"


def op_body(profile, kind):
    """The caller's further fields of an operation (payretry's --body), beside
    what payretry writes itself (the amount, the payment's id, the key): what
    the provider requires and has no profile template for, the same values the
    SDK client is given."""
    if profile == "adyen":
        b = {"merchantAccount": "PayretryTestMerchant"}
        if kind != "cancel":
            b["amount"] = {"currency": "EUR"}
        return b
    if profile == "paypal":
        return {"amount": {"currency_code": "USD"}} if kind != "cancel" else {}
    if profile == "square":
        return {"amount_money": {"currency": "USD"}}
    if profile == "mollie":
        return {"amount": {"currency": "EUR"}}
    if profile == "wechatpay_v3":
        # wechatpayv3 adds the client's notify_url to a refund by itself.
        return {"amount": {"total": AMOUNT_MINOR, "currency": "CNY"}, "notify_url": WECHAT_NOTIFY_URL}
    return {}


def payretry_auth(profile, keys_dir):
    """The config's auth object (and extra top-level members) for payretry."""
    kd = keys_dir
    if profile == "stripe":
        return {"auth": {"bearer": STRIPE_KEY}}
    if profile == "adyen":
        return {"auth": {"api_key": ADYEN_API_KEY}}
    if profile == "paypal":
        return {"auth": {"oauth2": {"client_id": PAYPAL_CLIENT_ID, "client_secret": PAYPAL_CLIENT_SECRET}}}
    if profile == "square":
        return {"auth": {"bearer": SQUARE_TOKEN}}
    if profile == "checkout_com":
        return {"auth": {"bearer": CHECKOUT_SECRET_KEY}}
    if profile == "mollie":
        return {"auth": {"bearer": MOLLIE_API_KEY}}
    if profile == "wechatpay_v3":
        return {"merchant_id": WECHAT_MCHID,
                "auth": {"wechatpay": {"serial_no": WECHAT_SERIAL_NO,
                                       "private_key_file": os.path.join(kd, "wechat_merchant_key.pem"),
                                       "platform_public_key_file": os.path.join(kd, "wechat_platform_pub.pem"),
                                       "platform_serial": WECHAT_PLATFORM_KEY_ID}}}
    if profile == "alipay":
        return {"auth": {"alipay": {"app_id": ALIPAY_APP_ID,
                                    "private_key_file": os.path.join(kd, "alipay_app_key.pem"),
                                    "alipay_public_key_file": os.path.join(kd, "alipay_pub.pem")}}}
    raise KeyError(profile)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
