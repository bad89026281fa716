package payretry

import (
	"context"
	"fmt"
	"sync"
)

// BatchResult is the answer of one payment of a batch: what Submit would
// have returned for it alone.
type BatchResult struct {
	Result *Result
	Err    error
}

// SubmitBatch submits payments concurrently, at most maxInFlight at once
// (0 or less: all of them), and returns when each one has an answer:
// results[i] is payments[i]'s. Every payment follows Submit's rules on the
// engine threads, and no OS thread is held per payment. Two payments with
// the same order id behave as two concurrent Submits (one runs, the other
// reports InProgress).
//
// When ctx ends, payments not yet started are not started (their Err wraps
// ctx.Err() and says so), and those in flight end as Submit's do: the
// engine's verdict at a deadline, or an *AbandonedError (the payment goes on
// in the background, recorded in the ledger).
//
// It is built on Submit's asynchronous path rather than pay_submit_batch,
// which would hold a thread for the whole batch and cannot take ctx.
func (c *Client) SubmitBatch(ctx context.Context, payments []Payment, maxInFlight int) []BatchResult {
	results := make([]BatchResult, len(payments))
	if maxInFlight <= 0 || maxInFlight > len(payments) {
		maxInFlight = len(payments)
	}
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	for i := range payments {
		p := payments[i]
		if err := takeSlot(ctx, slots); err != nil {
			results[i].Err = fmt.Errorf("payretry: submit of order %q not started: %w", p.OrderID, err)
			continue
		}
		if err := checkPayment(&p); err != nil {
			results[i].Err = err
			<-slots
			continue
		}
		pending, err := c.start(ctx, &p)
		if err != nil {
			results[i].Err = err
			<-slots
			continue
		}
		wg.Add(1)
		go func(i int, orderID string) {
			defer wg.Done()
			defer func() { <-slots }()
			res, err := pending.wait(ctx, orderID)
			res, err = c.s.attachRefusal(orderID, res, err)
			results[i] = BatchResult{Result: res, Err: err}
		}(i, p.OrderID)
	}
	wg.Wait()
	return results
}

// takeSlot waits for a free slot, or returns ctx's error once it ended.
func takeSlot(ctx context.Context, slots chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
