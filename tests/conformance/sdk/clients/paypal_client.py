"""paypal-server-sdk: OAuth2 client credentials (POST /v1/oauth2/token, Basic),
then Orders v2 create with PayPal-Request-Id and get by the returned id. Then,
as the plan says, an order created with intent AUTHORIZE, its authorization
captured in part (Payments v2 capture_authorized_payment) and that capture
refunded in part (refund_captured_payment), and another authorization voided
(void_payment), each under the key payretry used."""
import sys

from common import cases, expect, run, run_plan

from paypalserversdk.configuration import Configuration, Environment, Server
from paypalserversdk.http.auth.o_auth_2 import ClientCredentialsAuthCredentials
from paypalserversdk.models.amount_with_breakdown import AmountWithBreakdown
from paypalserversdk.models.capture_request import CaptureRequest
from paypalserversdk.models.captured_payment import CapturedPayment
from paypalserversdk.models.checkout_payment_intent import CheckoutPaymentIntent
from paypalserversdk.models.money import Money
from paypalserversdk.models.order import Order
from paypalserversdk.models.order_request import OrderRequest
from paypalserversdk.models.purchase_unit_request import PurchaseUnitRequest
from paypalserversdk.models.refund import Refund
from paypalserversdk.models.refund_request import RefundRequest
from paypalserversdk.paypal_serversdk_client import PaypalServersdkClient


def main(a, result):
    # The SDK's base URL comes from Configuration.environments (APIMatic); the
    # sandbox entry is pointed at the recorder.
    Configuration.environments = {env: {Server.DEFAULT: a.base} for env in Environment}
    client = PaypalServersdkClient(
        client_credentials_auth_credentials=ClientCredentialsAuthCredentials(
            o_auth_client_id=cases.PAYPAL_CLIENT_ID, o_auth_client_secret=cases.PAYPAL_CLIENT_SECRET),
        environment=Environment.SANDBOX, max_retries=0)

    def create(step, state):
        held = step["variant"] == "held"
        body = OrderRequest(
            intent=CheckoutPaymentIntent.AUTHORIZE if held else CheckoutPaymentIntent.CAPTURE,
            purchase_units=[PurchaseUnitRequest(
                reference_id=step["order"],
                amount=AmountWithBreakdown(currency_code="USD", value=cases.AMOUNT_MAJOR))])
        res = client.orders.create_order({"body": body, "paypal_request_id": step["key"]})
        order = res.body
        expect(res.status_code in (200, 201), f"create: HTTP {res.status_code}: {res.text}")
        expect(isinstance(order, Order), f"create parsed into {type(order).__name__}, not Order")
        expect(order.id, f"create: no order id in {res.text}")
        expect(order.status, f"create: no status in {res.text}")
        if held:
            auths = order.purchase_units[0].payments.authorizations
            expect(auths and auths[0].id, f"create: no authorization in {res.text}")
            state.setdefault("auth", {})[step["payment"]] = auths[0].id
        return {"id": order.id, "status": order.status}

    def lookup(step, state):
        oid = state["ids"][step["payment"]]
        got = client.orders.get_order({"id": oid})
        expect(got.status_code == 200, f"get: HTTP {got.status_code}: {got.text}")
        expect(isinstance(got.body, Order), f"get parsed into {type(got.body).__name__}")
        expect(got.body.id == oid, f"get: id {got.body.id!r} != {oid!r}")
        return {"id": got.body.id, "status": got.body.status}

    def money(step):
        return Money(currency_code=step["body"]["amount"]["currency_code"], value=cases.major(step["amount"]))

    def capture(step, state):
        res = client.payments.capture_authorized_payment({
            "authorization_id": state["auth"][step["payment"]], "paypal_request_id": step["key"],
            "body": CaptureRequest(amount=money(step))})
        expect(res.status_code in (200, 201), f"capture: HTTP {res.status_code}: {res.text}")
        expect(isinstance(res.body, CapturedPayment), f"capture parsed into {type(res.body).__name__}")
        expect(res.body.amount.value == cases.major(step["amount"]), f"capture: amount {res.body.amount.value}")
        state.setdefault("capture", {})[step["payment"]] = res.body.id
        return {"id": res.body.id, "status": res.body.status}

    def refund(step, state):
        res = client.payments.refund_captured_payment({
            "capture_id": state["capture"][step["payment"]], "paypal_request_id": step["key"],
            "body": RefundRequest(amount=money(step))})
        expect(res.status_code in (200, 201), f"refund: HTTP {res.status_code}: {res.text}")
        expect(isinstance(res.body, Refund), f"refund parsed into {type(res.body).__name__}")
        return {"id": res.body.id, "status": res.body.status}

    def cancel(step, state):
        # At the API's default (Prefer: return=minimal): 204 with no body, or 200 with the
        # authorization under return=representation.
        res = client.payments.void_payment({
            "authorization_id": state["auth"][step["payment"]], "paypal_request_id": step["key"]})
        expect(res.status_code in (200, 204), f"void: HTTP {res.status_code}: {res.text}")
        return {"status": res.body.status if res.body is not None else None}

    run_plan(a, result, {"create": create, "lookup": lookup, "capture": capture, "refund": refund,
                         "cancel": cancel})


if __name__ == "__main__":
    sys.exit(run(main))
