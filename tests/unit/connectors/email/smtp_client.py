#!/usr/bin/env python3
"""A real SMTP client session for the email connector tests (Python's smtplib).

usage: smtp_client.py PORT MAIL_FROM RCPT[,RCPT...] MESSAGE_FILE [size]
Prints one JSON object with the reply code of each step, e.g.
{"ehlo": 250, "mail": 250, "rcpt": [250], "data": 250}. With "size" the MAIL command carries
SIZE=<bytes> (smtplib's sendmail() does the same when the server advertises SIZE).
"""
import json
import smtplib
import sys


def main() -> int:
    port = int(sys.argv[1])
    mail_from = sys.argv[2]
    rcpts = sys.argv[3].split(",")
    with open(sys.argv[4], "rb") as f:
        data = f.read()
    use_size = len(sys.argv) > 5 and sys.argv[5] == "size"
    out = {}
    s = smtplib.SMTP("127.0.0.1", port, timeout=30)
    out["ehlo"] = s.ehlo("client.test")[0]
    opts = ["SIZE=%d" % len(data)] if use_size else []
    out["mail"] = s.mail(mail_from, opts)[0]
    out["rcpt"] = []
    if out["mail"] == 250:
        out["rcpt"] = [s.rcpt(r)[0] for r in rcpts]
    if out["mail"] == 250 and 250 in out["rcpt"]:
        try:
            out["data"] = s.data(data)[0]
        except smtplib.SMTPDataError as e:
            out["data"] = e.smtp_code
    try:
        s.quit()
    except smtplib.SMTPServerDisconnected:
        pass
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
