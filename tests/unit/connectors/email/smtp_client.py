#!/usr/bin/env python3
"""A real SMTP client session for the email connector tests (Python's smtplib).

usage: smtp_client.py PORT MAIL_FROM RCPT[,RCPT...] MESSAGE_FILE [OPTION,...]
Prints one JSON object with the reply code of each step, e.g.
{"ehlo": 250, "mail": 250, "rcpt": [250], "data": 250}. With "size" the MAIL command carries
SIZE=<bytes> (smtplib's sendmail() does the same when the server advertises SIZE); "tls" runs
STARTTLS first (certificate not verified: the tests use a throwaway self-signed one);
"auth=USER:PASS" logs in with AUTH PLAIN. Reply codes of those steps are reported too.
"""
import json
import smtplib
import ssl
import sys


def main() -> int:
    port = int(sys.argv[1])
    mail_from = sys.argv[2]
    rcpts = sys.argv[3].split(",")
    with open(sys.argv[4], "rb") as f:
        data = f.read()
    options = sys.argv[5].split(",") if len(sys.argv) > 5 else []
    use_size = "size" in options
    out = {}
    s = smtplib.SMTP("127.0.0.1", port, timeout=30)
    out["ehlo"] = s.ehlo("client.test")[0]
    if "tls" in options:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        out["starttls"] = s.starttls(context=ctx)[0]
        out["ehlo_tls"] = s.ehlo("client.test")[0]
        out["features"] = sorted(s.esmtp_features.keys())
    for opt in options:
        if opt.startswith("auth="):
            user, _, password = opt[len("auth="):].partition(":")
            try:
                out["auth"] = s.login(user, password, initial_response_ok=True)[0]
            except smtplib.SMTPAuthenticationError as e:
                out["auth"] = e.smtp_code
    opts = ["SIZE=%d" % len(data)] if use_size else []
    s.ehlo_or_helo_if_needed()
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
