// A program outside the binding's module that uses it as a user would.
// run_tests.sh copies this folder out of the repository and points the
// replace directive at the binding it tests.
module example.com/payretry-signing-consumer

go 1.24

require github.com/payretry/payretry/bindings/go v0.0.0

replace github.com/payretry/payretry/bindings/go => ../..
