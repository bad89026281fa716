"""paypal-server-sdk: OAuth2 client credentials (POST /v1/oauth2/token, Basic),
then Orders v2 create with PayPal-Request-Id and get by the returned id."""
import sys

from common import cases, expect, run

from paypalserversdk.configuration import Configuration, Environment, Server
from paypalserversdk.http.auth.o_auth_2 import ClientCredentialsAuthCredentials
from paypalserversdk.models.amount_with_breakdown import AmountWithBreakdown
from paypalserversdk.models.checkout_payment_intent import CheckoutPaymentIntent
from paypalserversdk.models.order import Order
from paypalserversdk.models.order_request import OrderRequest
from paypalserversdk.models.purchase_unit_request import PurchaseUnitRequest
from paypalserversdk.paypal_serversdk_client import PaypalServersdkClient


def main(a, result):
    # The SDK's base URL comes from Configuration.environments (APIMatic); the
    # sandbox entry is pointed at the recorder.
    Configuration.environments = {env: {Server.DEFAULT: a.base} for env in Environment}
    client = PaypalServersdkClient(
        client_credentials_auth_credentials=ClientCredentialsAuthCredentials(
            o_auth_client_id=cases.PAYPAL_CLIENT_ID, o_auth_client_secret=cases.PAYPAL_CLIENT_SECRET),
        environment=Environment.SANDBOX, max_retries=0)
    body = OrderRequest(
        intent=CheckoutPaymentIntent.CAPTURE,
        purchase_units=[PurchaseUnitRequest(
            reference_id=cases.ORDER_ID,
            amount=AmountWithBreakdown(currency_code="USD", value=cases.AMOUNT_MAJOR))])
    res = client.orders.create_order({"body": body, "paypal_request_id": cases.IDEMPOTENCY_KEY})
    order = res.body
    expect(res.status_code in (200, 201), f"create: HTTP {res.status_code}: {res.text}")
    expect(isinstance(order, Order), f"create parsed into {type(order).__name__}, not Order")
    expect(order.id, f"create: no order id in {res.text}")
    expect(order.status, f"create: no status in {res.text}")
    result["create"] = {"id": order.id, "status": order.status}
    got = client.orders.get_order({"id": order.id})
    expect(got.status_code == 200, f"get: HTTP {got.status_code}: {got.text}")
    expect(isinstance(got.body, Order), f"get parsed into {type(got.body).__name__}")
    expect(got.body.id == order.id, f"get: id {got.body.id!r} != {order.id!r}")
    result["lookup"] = {"id": got.body.id, "status": got.body.status}


if __name__ == "__main__":
    sys.exit(run(main))
