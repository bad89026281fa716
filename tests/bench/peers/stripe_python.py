"""stripe-python as its users run it: stripe.PaymentIntent.create with an explicit
idempotency key, max_network_retries = 2, api_base pointed at the simulator (which serves the
form-encoded POST /v1/payment_intents). N threads in a ThreadPoolExecutor keep N payments in
flight (the GIL included: that is the peer's real behaviour)."""
import stripe

import bench_common


def main():
    a = bench_common.args(__doc__)
    stripe.api_key = "sk_test_bench"
    stripe.api_base = a.url
    stripe.max_network_retries = 2

    def submit(order):
        try:
            pi = stripe.PaymentIntent.create(
                amount=1000, currency="usd", metadata={"order_id": order},
                idempotency_key="key-" + order)
        except stripe.CardError:
            return "failed"  # a decline: definitive
        return "succeeded" if pi.status == "succeeded" else "error"

    bench_common.run("stripe-python", a, submit)


if __name__ == "__main__":
    main()
