"""Which addresses a cluster source may reach: the address policy, which an httpx
transport (:mod:`dashboard.sources.transport`) applies after DNS, to the very address it
then connects to.

A source's base URL is written by a staff user, and the poller fetches it from inside
the dashboard's network, so a URL could point the poller at the cloud metadata service,
at the dashboard's own PostgreSQL or Redis, or at anything else only the dashboard can
reach.  The policy (settings, read at every check):

- ``SOURCES_DENIED_NETWORKS``: refused networks.  The default
  (:data:`DEFAULT_DENIED_NETWORKS`) is link-local (where cloud metadata lives), the
  other known metadata addresses, unspecified addresses (``0.0.0.0/8``, ``::``),
  multicast and broadcast.  Private networks and loopback stay allowed: schedulers run
  there.
- ``SOURCES_ALLOWED_NETWORKS``: when not empty, an address must also be inside one of
  these networks.
- ``SOURCES_DENIED_PORTS``: refused ports on any address; by default the dashboard's
  own service ports (:func:`own_service_ports`: its database, its Redis / Celery
  broker, its web ports ``DASHBOARD_WEB_PORTS``).

An IPv6 address that carries an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``,
IPv4-compatible, NAT64 ``64:ff9b::/96``, 6to4, Teredo) is checked as that IPv4 address
too.  A host written as an IPv4 literal in any spelling the system resolver accepts
(``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``, ``169.254.43518``) is read as
the resolver reads it (``inet_aton``), so it is refused when it is saved.

Every poll checks again after DNS: :class:`~dashboard.sources.transport.PolicyTransport`
resolves the host once per request, checks every address it got, and connects to the
first of them (the Host header and TLS server name stay the source's host name), so a
name cannot resolve to an allowed address for the check and to another one for the
connection (DNS rebinding).  Redirects are never followed (see ``client``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_DENIED_NETWORKS: tuple[str, ...] = (
    "169.254.0.0/16",  # IPv4 link-local: AWS/GCP/Azure/OpenStack metadata at 169.254.169.254
    "fe80::/10",  # IPv6 link-local
    "fd00:ec2::254/128",  # AWS metadata over IPv6
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "0.0.0.0/8",  # unspecified / "this network"
    "::/128",  # IPv6 unspecified
    "224.0.0.0/4",  # multicast
    "ff00::/8",
    "255.255.255.255/32",  # broadcast
)

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class AddressRefused(Exception):
    """An address the policy refuses; the message names the rule (setting and network)."""


@dataclass(frozen=True)
class AddressPolicy:
    denied: tuple[IPNetwork, ...]
    allowed: tuple[IPNetwork, ...] = ()
    denied_ports: frozenset[int] = frozenset()

    @classmethod
    def build(
        cls,
        denied: Iterable[str] = DEFAULT_DENIED_NETWORKS,
        allowed: Iterable[str] = (),
        denied_ports: Iterable[int] = (),
    ) -> AddressPolicy:
        return cls(
            denied=tuple(ipaddress.ip_network(n, strict=False) for n in denied),
            allowed=tuple(ipaddress.ip_network(n, strict=False) for n in allowed),
            denied_ports=frozenset(int(p) for p in denied_ports),
        )

    def check_port(self, port: int) -> None:
        if port in self.denied_ports:
            raise AddressRefused(
                f"port {port} is one of the dashboard's own service ports (database, "
                "Redis/broker, web server): refused by SOURCES_DENIED_PORTS"
            )

    def check(self, ip: IPAddress, port: int | None = None, host: str = "") -> None:
        """Raise :class:`AddressRefused` naming the rule when *ip* (or *port*) is refused."""
        where = f"{host} is {ip}" if host and host != str(ip) else f"address {ip}"
        for candidate in (ip, *embedded_ipv4(ip)):
            for net in self.denied:
                if candidate.version == net.version and candidate in net:
                    via = f" (carries {candidate})" if candidate != ip else ""
                    raise AddressRefused(
                        f"{where}{via}, in the denied network {net} "
                        f"({_kind(net)}; SOURCES_DENIED_NETWORKS)"
                    )
        if self.allowed and not any(
            c.version == net.version and c in net
            for c in (ip, *embedded_ipv4(ip))
            for net in self.allowed
        ):
            nets = ", ".join(str(n) for n in self.allowed)
            raise AddressRefused(
                f"{where}, outside the allowed networks {nets} (SOURCES_ALLOWED_NETWORKS)"
            )
        if port is not None:
            self.check_port(port)


def _kind(net: IPNetwork) -> str:
    probe = net.network_address
    if probe.is_link_local:
        return "link-local, where cloud metadata services answer"
    if probe.is_unspecified or str(net) == "0.0.0.0/8":
        return "unspecified address"
    if probe.is_multicast:
        return "multicast"
    if str(net) in ("fd00:ec2::254/128", "100.100.100.200/32"):
        return "cloud metadata service"
    if str(net) == "255.255.255.255/32":
        return "broadcast"
    return "denied"


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo).

    >>> [str(a) for a in embedded_ipv4(ipaddress.ip_address("::ffff:a9fe:a9fe"))]
    ['169.254.169.254']
    """
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    out: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        out.append(ip.ipv4_mapped)
    packed = ip.packed
    if ip in _NAT64 or (packed[:12] == bytes(12) and int(ip) > 1):
        out.append(ipaddress.IPv4Address(packed[12:]))
    if ip.sixtofour is not None:
        out.append(ip.sixtofour)
    if ip.teredo is not None:
        out.extend(ip.teredo)
    return out


def literal_ip(host: str) -> IPAddress | None:
    """The address a host written as an IP literal stands for, in any spelling the system
    resolver accepts; ``None`` for a host name.

    >>> literal_ip("2852039166"), literal_ip("0xa9fea9fe"), literal_ip("0251.0376.0251.0376")
    (IPv4Address('169.254.169.254'), IPv4Address('169.254.169.254'), IPv4Address('169.254.169.254'))
    >>> literal_ip("[::ffff:a9fe:a9fe]"), literal_ip("yunikorn.example")
    (IPv6Address('::ffff:a9fe:a9fe'), None)
    """
    text = host.strip().strip("[]").rstrip(".")
    text = text.split("%", 1)[0]  # an IPv6 zone (fe80::1%eth0)
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not text or any(c not in "0123456789abcdefABCDEFxX." for c in text):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def check_url(url: str, policy: AddressPolicy) -> None:
    """What can be checked without DNS: a literal IP host and the port."""
    parts = urlsplit(url.strip())
    port = parts.port or default_port(parts.scheme)
    ip = literal_ip(parts.hostname or "")
    if ip is not None:
        policy.check(ip, port, host=parts.hostname or "")
    else:
        policy.check_port(port)


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address *host* resolves to (the system resolver, as a connection would)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in out:
            out.append(ip)
    return out


def own_service_ports() -> list[int]:
    """The dashboard's own service ports, from its settings: database, Redis and Celery
    broker, web server (``DASHBOARD_WEB_PORTS``)."""
    from django.conf import settings

    ports: set[int] = set()
    for db in settings.DATABASES.values():
        engine = str(db.get("ENGINE", ""))
        port = str(db.get("PORT") or "")
        if port.isdigit():
            ports.add(int(port))
        elif "postgresql" in engine:
            ports.add(5432)
        elif "mysql" in engine:
            ports.add(3306)
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        url = getattr(settings, name, None)
        if not url or "://" not in str(url):
            continue
        parts = urlsplit(str(url))
        if not parts.hostname:
            continue  # sqla+sqlite:///file: no port
        try:
            port_of = parts.port
        except ValueError:
            continue
        scheme = parts.scheme.split("+")[0]
        defaults = {"redis": 6379, "rediss": 6379, "amqp": 5672, "amqps": 5671}
        if port_of is not None:
            ports.add(port_of)
        elif scheme in defaults:
            ports.add(defaults[scheme])
    ports.update(int(p) for p in getattr(settings, "DASHBOARD_WEB_PORTS", []))
    return sorted(ports)


def policy_from_settings() -> AddressPolicy:
    """The policy in force (settings are read at every check, so tests and reloads apply)."""
    from django.conf import settings

    denied_ports = getattr(settings, "SOURCES_DENIED_PORTS", None)
    denied = getattr(settings, "SOURCES_DENIED_NETWORKS", None)
    return AddressPolicy.build(
        denied=DEFAULT_DENIED_NETWORKS if denied is None else denied,
        allowed=getattr(settings, "SOURCES_ALLOWED_NETWORKS", ()),
        denied_ports=own_service_ports() if denied_ports is None else denied_ports,
    )
