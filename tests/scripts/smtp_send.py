#!/usr/bin/env python3
"""One SMTP session with Python's smtplib, for the email connector's process-level tests.

Usage: smtp_send.py '<json>' with {"host", "port", "from", "rcpt": [...], "subject", "text",
"messageId"?, "attachment"?: {"filename", "mediaType", "content"}, "auth"?: {"user", "password"}}.
Prints one JSON line: {"ehlo": code, "auth"?: code, "mail": code, "rcpt": [codes], "data": code | null,
"dataReply": text}. A refused AUTH ends the session after the reply (no MAIL).
DATA is sent only when a recipient was accepted, exactly as a real MTA would.
"""
import json
import smtplib
import sys
from email.message import EmailMessage


def build(spec):
    msg = EmailMessage()
    msg["From"] = spec["from"]
    msg["To"] = ", ".join(spec["rcpt"])
    msg["Subject"] = spec["subject"]
    if spec.get("messageId"):
        msg["Message-ID"] = spec["messageId"]
    msg.set_content(spec["text"])
    att = spec.get("attachment")
    if att:
        maintype, subtype = att["mediaType"].split("/", 1)
        msg.add_attachment(att["content"].encode("utf-8"), maintype=maintype, subtype=subtype,
                           filename=att["filename"])
    return msg


def main():
    spec = json.loads(sys.argv[1])
    out = {"rcpt": [], "data": None, "dataReply": ""}
    with smtplib.SMTP(spec["host"], spec["port"], timeout=15) as s:
        out["ehlo"] = s.ehlo("client.example.test")[0]
        auth = spec.get("auth")
        if auth:
            try:
                out["auth"] = s.login(auth["user"], auth["password"])[0]
            except smtplib.SMTPAuthenticationError as e:
                out["auth"] = e.smtp_code
                print(json.dumps(out))
                return
        out["mail"] = s.mail(spec["from"])[0]
        for r in spec["rcpt"]:
            out["rcpt"].append(s.rcpt(r)[0])
        if 250 in out["rcpt"]:
            try:
                # CRLF line ends, as an MTA sends: as_bytes() alone gives bare LFs, which data()
                # passes on unchanged and the connector refuses (RFC 5321 §2.3.8).
                msg = build(spec)
                code, reply = s.data(msg.as_bytes(policy=msg.policy.clone(linesep="\r\n")))
            except smtplib.SMTPDataError as e:
                code, reply = e.smtp_code, e.smtp_error
            out["data"] = code
            out["dataReply"] = reply.decode("utf-8", "replace")
        else:
            s.rset()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
