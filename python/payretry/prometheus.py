"""payretry's metrics in ``prometheus_client``: a collector that reads
:meth:`payretry.Client.metrics` (the C library's own Prometheus text,
``pay_client_metrics``) at every scrape, so that the client's counters are
served beside the application's own metrics.

    from prometheus_client import start_http_server
    import payretry.prometheus

    payretry.prometheus.register(client)   # into prometheus_client's default REGISTRY
    start_http_server(9100)

Several clients (one per provider, say) go into one collector, each sample
labelled with its client's name: ``register({"stripe": c1, "adyen": c2})``.

Needs the ``prometheus_client`` package; ``import payretry`` alone never
imports it, only ``import payretry.prometheus`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Dict, List, Optional, Union

try:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.parser import text_string_to_metric_families
    from prometheus_client.registry import REGISTRY, Collector, CollectorRegistry
except ImportError as e:
    raise ImportError(
        "payretry.prometheus needs the prometheus_client package (pip install prometheus_client)"
    ) from e

from ._errors import ClientClosedError

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["PayretryCollector", "register"]


class PayretryCollector(Collector):
    """Collects the metrics of one client, or of several named ones (a
    mapping of name to client: each sample then carries ``label=name``), at
    every scrape. A closed client contributes nothing."""

    def __init__(self, clients: Union[Client, Mapping[str, Client]], *, label: str = "client") -> None:
        self._label: Optional[str]
        if isinstance(clients, Mapping):
            if not clients:
                raise ValueError("no client to collect from")
            self._clients: Dict[str, Client] = dict(clients)
            self._label = label
        else:
            self._clients = {"": clients}
            self._label = None

    def collect(self) -> List[Metric]:
        families: Dict[str, Metric] = {}
        for name, client in self._clients.items():
            try:
                text = client.metrics()
            except ClientClosedError:
                continue  # closed since the last scrape: its series end
            for family in text_string_to_metric_families(text):
                if self._label is not None:
                    family.samples = [s._replace(labels={self._label: name, **s.labels}) for s in family.samples]
                # One family per metric name, whatever the number of clients:
                # an exposition may not repeat a name.
                merged = families.get(family.name)
                if merged is None:
                    families[family.name] = family
                else:
                    merged.samples.extend(family.samples)
        return list(families.values())


def register(
    clients: Union[Client, Mapping[str, Client]],
    registry: CollectorRegistry = REGISTRY,
    *,
    label: str = "client",
) -> PayretryCollector:
    """Registers a :class:`PayretryCollector` of ``clients`` in ``registry``
    (prometheus_client's default one unless given) and returns it, for
    ``registry.unregister(collector)`` once the clients are closed."""
    collector = PayretryCollector(clients, label=label)
    registry.register(collector)
    return collector
