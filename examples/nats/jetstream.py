#!/usr/bin/env python3
"""A few JetStream operations over the NATS text protocol, standard library only (Debian has no
NATS command-line tool): create a stream, publish messages (waiting for each PubAck), show a
consumer. For the example and the bench; the bridge itself uses the official C client.

    jetstream.py [--server nats://127.0.0.1:4222] stream-create ORDERS 'orders.>'
    jetstream.py publish orders.created '{"customer":"c-42","total":99.5}' [--count N]
    jetstream.py consumer ORDERS wopbridge
"""
import argparse
import json
import socket
import sys
import urllib.parse


class Client:
    def __init__(self, url, timeout=10.0):
        u = urllib.parse.urlparse(url if "://" in url else "nats://" + url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout)
        self.buf = b""
        self._line()  # INFO
        opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                "name": "jetstream.py", "lang": "python", "version": "1", "protocol": 1}
        if u.username and u.password:
            opts.update(user=urllib.parse.unquote(u.username), **{"pass": urllib.parse.unquote(u.password)})
        elif u.username:
            opts["auth_token"] = urllib.parse.unquote(u.username)
        self.sock.sendall(b"CONNECT " + json.dumps(opts).encode() + b"\r\nSUB _INBOX.jspy.* 1\r\nPING\r\n")
        while True:
            line = self._line()
            if line.startswith(b"-ERR"):
                sys.exit("jetstream.py: " + line.decode())
            if line == b"PONG":
                break
        self.next = 0

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                sys.exit("jetstream.py: connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                sys.exit("jetstream.py: connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def send(self, subject, payload):
        """Publishes with a reply inbox; returns the inbox to wait on."""
        self.next += 1
        inbox = f"_INBOX.jspy.{self.next}"
        self.sock.sendall(f"PUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n")
        return inbox

    def reply(self):
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
            elif line.startswith(b"MSG "):
                return json.loads(self._exact(int(line.split()[-1])) or b"{}")
            elif line.startswith(b"HMSG "):
                parts = line.split()
                raw = self._exact(int(parts[-1]))
                status = raw[: int(parts[-2])].split(b"\r\n")[0].decode()
                sys.exit(f"jetstream.py: no JetStream answer ({status}); is the server run with -js?")
            elif line.startswith(b"-ERR"):
                sys.exit("jetstream.py: " + line.decode())

    def request(self, subject, body):
        self.send(subject, json.dumps(body).encode())
        return self.reply()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default="nats://127.0.0.1:4222")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stream-create")
    s.add_argument("name")
    s.add_argument("subjects", nargs="+")
    pub = sub.add_parser("publish")
    pub.add_argument("subject")
    pub.add_argument("data")
    pub.add_argument("--count", type=int, default=1)
    pub.add_argument("--window", type=int, default=256, help="PubAcks outstanding at most")
    pub.add_argument("--quiet", action="store_true")
    c = sub.add_parser("consumer")
    c.add_argument("stream")
    c.add_argument("durable")
    a = p.parse_args()
    cl = Client(a.server)
    if a.cmd == "stream-create":
        r = cl.request(f"$JS.API.STREAM.CREATE.{a.name}",
                       {"name": a.name, "subjects": a.subjects, "storage": "file"})
        if "error" in r and r["error"].get("err_code") != 10058:  # 10058: exists with this name
            sys.exit("jetstream.py: " + r["error"].get("description", "stream create failed"))
        print(f"stream {a.name}: {' '.join(a.subjects)}")
    elif a.cmd == "publish":
        data = a.data.encode()
        sent = acked = 0
        while acked < a.count:
            while sent < a.count and sent - acked < a.window:
                cl.send(a.subject, data.replace(b"{n}", str(sent).encode()))
                sent += 1
            r = cl.reply()
            if "error" in r:
                sys.exit("jetstream.py: " + r["error"].get("description", "publish failed"))
            acked += 1
            if not a.quiet:
                print(f"{r['stream']}:{r['seq']}")
    else:
        r = cl.request(f"$JS.API.CONSUMER.INFO.{a.stream}.{a.durable}", {})
        if "error" in r:
            sys.exit("jetstream.py: " + r["error"].get("description", "no such consumer"))
        print(json.dumps({k: r.get(k) for k in ("num_pending", "num_ack_pending", "num_redelivered",
                                                "delivered", "ack_floor")}, indent=1))


if __name__ == "__main__":
    main()
