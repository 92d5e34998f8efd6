"""A fake OAuth token endpoint for the real ``claude``, reached through an HTTPS proxy.

Claude Code refreshes a subscription login at a fixed address (``https://platform.claude.com/
v1/oauth/token``; its override variable accepts only Anthropic's own hosts), so a test cannot
point it at 127.0.0.1. It does honour ``HTTPS_PROXY`` and ``NODE_EXTRA_CA_CERTS``: this proxy
answers ``CONNECT`` for the names in ``HOSTS`` with a certificate from a throwaway CA made with
``openssl``, serves the token endpoint itself and answers anything else with 404 (every other
``CONNECT`` is refused). ``env()`` gives the variables to hand the CLI; ``requests`` records what
arrived (method, host, path, JSON body).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOSTS = ("platform.claude.com", "api.anthropic.com", "claude.ai", "console.anthropic.com")
TOKEN_PATH = "/v1/oauth/token"


@dataclass
class Seen:
    method: str
    host: str
    path: str
    body: Any


def make_certificates(directory: Path, hosts: tuple[str, ...] = HOSTS) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for ``hosts``."""
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "server.ext"
    ext.write_text(
        "subjectAltName=" + ",".join(f"DNS:{h}" for h in hosts) + "\n"
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n",
        encoding="ascii",
    )

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca_cert),
        "-days",
        "2",
        "-subj",
        "/CN=skillopt-sleep test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    )
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={hosts[0]}")
    openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca_cert),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "2",
        "-extfile",
        str(ext),
    )
    return ca_cert, cert, key


class TokenProxy:
    """See the module docstring; ``token_reply`` is the JSON the token endpoint answers. Another
    agent's login is served by passing its ``hosts`` and overriding ``answer``."""

    def __init__(self, directory: Path, token_reply: dict[str, Any], hosts: tuple[str, ...] = HOSTS):
        self.hosts = hosts
        self.ca, cert, key = make_certificates(directory, hosts)
        self.token_reply = token_reply
        self.requests: list[Seen] = []
        self.refused: list[str] = []
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(str(cert), str(key))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> TokenProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(timeout=5)

    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self.port}"
        return {
            "HTTPS_PROXY": proxy,
            "https_proxy": proxy,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "NODE_EXTRA_CA_CERTS": str(self.ca),
        }

    def token_requests(self) -> list[Seen]:
        return [r for r in self.requests if r.path.split("?")[0] == TOKEN_PATH]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        try:
            reader = conn.makefile("rb")
            request_line = reader.readline().decode("latin-1").split()
            while reader.readline() not in (b"\r\n", b"\n", b""):
                pass
            host = request_line[1].rsplit(":", 1)[0] if len(request_line) >= 2 else ""
            if len(request_line) < 2 or request_line[0] != "CONNECT" or host not in self.hosts:
                self.refused.append(" ".join(request_line[:2]))
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                return
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            with self._tls.wrap_socket(conn, server_side=True) as tls:
                self._http(tls, host)
        except (OSError, ssl.SSLError, IndexError):
            pass
        finally:
            conn.close()

    def _http(self, tls: ssl.SSLSocket, host: str) -> None:
        reader = tls.makefile("rb")
        while True:
            line = reader.readline().decode("latin-1").split()
            if len(line) < 2:
                return
            headers: dict[str, str] = {}
            while True:
                header = reader.readline().decode("latin-1")
                if header in ("\r\n", "\n", ""):
                    break
                name, _, value = header.partition(":")
                headers[name.strip().lower()] = value.strip()
            raw = reader.read(int(headers.get("content-length") or 0))
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            self.requests.append(Seen(line[0], host, line[1], body))
            status, content_type, payload = self.answer(line[0], host, line[1], headers, raw)
            tls.sendall(
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )

    def answer(self, method: str, host: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[str, str, bytes]:
        """(status line, content type, body) for one request through the tunnel."""
        if host == self.hosts[0] and path.split("?")[0] == TOKEN_PATH and method == "POST":
            return "200 OK", "application/json", json.dumps(self.token_reply).encode()
        return "404 Not Found", "application/json", b'{"error":"not_found"}'
