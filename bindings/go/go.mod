module github.com/payretry/payretry/bindings/go

go 1.24
