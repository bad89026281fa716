"""What :meth:`payretry.Client.submit_operation` does to a payment."""

from __future__ import annotations

import enum


class Operation(enum.IntEnum):
    """A capture, refund or cancel of a payment already submitted
    (``pay_operation``; the values are the C enum's). The kind's name is the
    one in the operation's ledger row id, ``"<order id> <kind> <ref>"``."""

    CAPTURE = 1  #: take (part of) an authorized hold
    REFUND = 2  #: give (part of) a paid payment back
    CANCEL = 3  #: void a payment no money has moved for yet

    def __str__(self) -> str:
        return self.name.lower()
