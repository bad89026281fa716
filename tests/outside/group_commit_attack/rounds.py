"""Deliveries in lockstep: THREADS threads wait on one barrier, then each
delivers its event of the round at the same instant, so the events of a
round queue together and share group commits. The barrier's action runs
between rounds (fill the disk, take the lock, free it)."""
import threading

import gca


def run_rounds(client, rounds, threads, between=None):
    """rounds: [[(event_id, body) or None per thread]]; between(i) runs
    before round i while every thread waits. Returns [[(event_id, reply)]]
    per round, in thread order."""
    out = [[None] * threads for _ in rounds]
    state = {"i": -1}

    def action():
        state["i"] += 1
        if between and state["i"] < len(rounds):
            between(state["i"])

    bar = threading.Barrier(threads, action=action)
    errors = []

    def run(t):
        for i, rnd in enumerate(rounds):
            bar.wait()
            item = rnd[t] if t < len(rnd) else None
            if item is None:
                continue
            eid, body = item
            try:
                out[i][t] = (eid, client.webhook(body, gca.sign(body)))
            except Exception as e:  # a call that failed outright is a finding of its own
                errors.append((eid, repr(e)))
                out[i][t] = (eid, {"status": -1, "outcome": None, "error": repr(e)})

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out, errors


def reply_events(reply):
    return [{k: e.get(k) for k in ("order_id", "finding", "effect", "state_before", "state_after", "why")}
            for e in (reply.get("outcome") or {}).get("events", [])]
