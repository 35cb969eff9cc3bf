#!/usr/bin/env python3
"""A few AMQP 0-9-1 operations, standard library only (Debian's amqp-tools cannot set a
message_id): declare a queue, publish messages with a message_id (waiting for the broker's
publisher confirms), show a queue's depth. For the example and the bench; the bridge itself
uses the official C client, rabbitmq-c.

    amqp.py [--url amqp://guest:guest@127.0.0.1:5672/] declare orders   (or $AMQP_URL)
    amqp.py publish orders '{"customer":"c-42","total":99.5}' [--id order-1] [--count N]
    amqp.py depth orders           # {"queue": "orders", "ready": 0, "consumers": 1}
"""
import argparse
import json
import os
import socket
import struct
import sys
import urllib.parse
import uuid

FRAME_END = b"\xce"


def shortstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("B", len(b)) + b


def longstr(b):
    return struct.pack(">I", len(b)) + b


class Client:
    def __init__(self, url, timeout=10.0):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 5672), timeout)
        self.buf = b""
        user = urllib.parse.unquote(u.username or "guest")
        password = urllib.parse.unquote(u.password or "guest")
        vhost = urllib.parse.unquote(u.path[1:]) if len(u.path) > 1 else "/"
        self.sock.sendall(b"AMQP\x00\x00\x09\x01")
        self._expect(10, 10)  # connection.start
        props = shortstr("product") + b"S" + longstr(b"amqp.py")
        self._method(0, 10, 11, longstr(props) + shortstr("PLAIN") +
                     longstr(b"\0" + user.encode() + b"\0" + password.encode()) + shortstr("en_US"))
        args = self._expect(10, 30)  # connection.tune
        channel_max, frame_max, _ = struct.unpack(">HIH", args[:8])
        self.frame_max = frame_max or 131072
        self._method(0, 10, 31, struct.pack(">HIH", channel_max, self.frame_max, 0))
        self._method(0, 10, 40, shortstr(vhost) + shortstr("") + b"\x00")
        self._expect(10, 41)
        self._method(1, 20, 10, shortstr(""))
        self._expect(20, 11)
        self.confirming = False
        self.published = 0
        self.acked = 0

    def _frame(self):
        while True:
            while len(self.buf) < 7:
                self._recv()
            ftype, channel, size = struct.unpack(">BHI", self.buf[:7])
            while len(self.buf) < 7 + size + 1:
                self._recv()
            payload = self.buf[7:7 + size]
            self.buf = self.buf[8 + size:]
            if ftype == 8:  # heartbeat
                continue
            return ftype, channel, payload

    def _recv(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            sys.exit("amqp.py: connection closed by the broker")
        self.buf += chunk

    def _expect(self, cls, meth):
        while True:
            ftype, _, payload = self._frame()
            if ftype != 1:
                continue
            c, m = struct.unpack(">HH", payload[:4])
            if (c, m) == (cls, meth):
                return payload[4:]
            if (c, m) == (60, 80):  # basic.ack (publisher confirm)
                self._on_ack(payload[4:])
                continue
            if (c, m) in ((10, 50), (20, 40)):  # connection.close / channel.close
                code = struct.unpack(">H", payload[4:6])[0]
                text = payload[7:7 + payload[6]].decode(errors="replace")
                sys.exit(f"amqp.py: broker closed: {code} {text}")

    def _on_ack(self, args):
        tag, multiple = struct.unpack(">QB", args[:9])
        self.acked = tag if multiple & 1 else max(self.acked, tag)

    def _method(self, channel, cls, meth, args):
        payload = struct.pack(">HH", cls, meth) + args
        self.sock.sendall(struct.pack(">BHI", 1, channel, len(payload)) + payload + FRAME_END)

    def declare(self, queue, passive=False):
        self._method(1, 50, 10, struct.pack(">H", 0) + shortstr(queue) +
                     struct.pack("B", 0x01 if passive else 0x02) + struct.pack(">I", 0))
        args = self._expect(50, 11)
        n = args[0]
        ready, consumers = struct.unpack(">II", args[1 + n:9 + n])
        return ready, consumers

    def publish(self, queue, body, message_id):
        if not self.confirming:
            self._method(1, 85, 10, b"\x00")  # confirm.select
            self._expect(85, 11)
            self.confirming = True
        self._method(1, 60, 40, struct.pack(">H", 0) + shortstr("") + shortstr(queue) + b"\x00")
        # content-type (bit 15), delivery-mode (bit 12), message-id (bit 7)
        flags = (1 << 15) | (1 << 12) | (1 << 7)
        props = shortstr("application/json") + b"\x02" + shortstr(message_id)
        header = struct.pack(">HHQH", 60, 0, len(body), flags) + props
        out = struct.pack(">BHI", 2, 1, len(header)) + header + FRAME_END
        step = self.frame_max - 8
        for i in range(0, max(len(body), 1), step):
            chunk = body[i:i + step]
            if chunk:
                out += struct.pack(">BHI", 3, 1, len(chunk)) + chunk + FRAME_END
        self.sock.sendall(out)
        self.published += 1

    def wait_confirms(self):
        while self.acked < self.published:
            ftype, _, payload = self._frame()
            if ftype == 1 and payload[:4] == struct.pack(">HH", 60, 80):
                self._on_ack(payload[4:])
            elif ftype == 1 and payload[:4] == struct.pack(">HH", 60, 120):
                sys.exit("amqp.py: the broker refused a message (basic.nack)")

    def close(self):
        self._method(0, 10, 50, struct.pack(">H", 200) + shortstr("bye") + struct.pack(">HH", 0, 0))
        self._expect(10, 51)
        self.sock.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default=os.environ.get("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/"),
                   help="default: $AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("declare")
    d.add_argument("queue")
    pub = sub.add_parser("publish")
    pub.add_argument("queue")
    pub.add_argument("body")
    pub.add_argument("--id", help="message_id (default: a new UUID; with --count, <id>-<n>)")
    pub.add_argument("--count", type=int, default=1)
    dp = sub.add_parser("depth")
    dp.add_argument("queue")
    a = p.parse_args()
    c = Client(a.url)
    if a.cmd == "declare":
        c.declare(a.queue)
    elif a.cmd == "publish":
        base = a.id or str(uuid.uuid4())
        for n in range(a.count):
            c.publish(a.queue, a.body.encode(), base if a.count == 1 else f"{base}-{n}")
        c.wait_confirms()
    else:
        ready, consumers = c.declare(a.queue, passive=True)
        print(json.dumps({"queue": a.queue, "ready": ready, "consumers": consumers}))
    c.close()


if __name__ == "__main__":
    main()
