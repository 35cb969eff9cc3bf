// Signs one webhook as its provider does, with the provider's own SDK where one signs
// (GitHub: @octokit/webhooks-methods; Stripe: stripe's generateTestHeaderString) and the
// provider's documented recipe (node:crypto) where none does (Shopify, Linear, Mailgun, Zoom).
// Discord: tweetnacl signs and discord-interactions' verifyKey (Discord's own check) must accept.
// Argument: {"provider", "secret", "body", "timestamp"}. Prints {"headers": {...}, "body"} on one
// line, with "publicKey" (Discord: the key the secret seed makes) and "expected" (Zoom: the
// encryptedToken its documentation answers a URL validation with) where they apply.
import { createHmac } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { verifyKey } from "discord-interactions";
import nacl from "tweetnacl";
import Stripe from "stripe";

const a = JSON.parse(process.argv[2]);
let headers = {};
let body = a.body;
const out = {};
switch (a.provider) {
  case "github":
    headers["x-hub-signature-256"] = await sign(a.secret, body);
    break;
  case "stripe": {
    const stripe = new Stripe("sk_test_unused");
    headers["stripe-signature"] = stripe.webhooks.generateTestHeaderString({
      payload: body, secret: a.secret, timestamp: a.timestamp });
    break;
  }
  case "shopify": // shopify.dev: "Step 2: Validate the origin of your webhook" (Node.js example)
    headers["x-shopify-hmac-sha256"] = createHmac("sha256", a.secret).update(body, "utf8").digest("base64");
    break;
  case "linear": // linear.app/developers/webhooks: HMAC-SHA256 hex of the raw body
    headers["linear-signature"] = createHmac("sha256", a.secret).update(body).digest("hex");
    break;
  case "mailgun": { // Mailgun: hex HMAC-SHA256(key, timestamp + token) inside the body
    const doc = JSON.parse(body);
    doc.signature.signature = createHmac("sha256", a.secret)
      .update(String(doc.signature.timestamp) + doc.signature.token).digest("hex");
    body = JSON.stringify(doc);
    break;
  }
  case "discord": { // secret: the application's 32-byte Ed25519 seed, hex
    const pair = nacl.sign.keyPair.fromSeed(Buffer.from(a.secret, "hex"));
    const ts = String(a.timestamp);
    const signature = Buffer.from(nacl.sign.detached(Buffer.from(ts + body), pair.secretKey)).toString("hex");
    out.publicKey = Buffer.from(pair.publicKey).toString("hex");
    if (!(await verifyKey(body, signature, ts, out.publicKey))) {
      throw new Error("discord-interactions' verifyKey refused tweetnacl's signature");
    }
    headers["x-signature-ed25519"] = signature;
    headers["x-signature-timestamp"] = ts;
    break;
  }
  case "zoom": { // developers.zoom.us/docs/api/webhooks/#verify-webhook-events (Node.js example)
    const ts = String(a.timestamp);
    const hash = createHmac("sha256", a.secret).update(`v0:${ts}:${body}`).digest("hex");
    headers["x-zm-signature"] = `v0=${hash}`;
    headers["x-zm-request-timestamp"] = ts;
    const doc = JSON.parse(body);
    if (doc.event === "endpoint.url_validation") {
      out.expected = createHmac("sha256", a.secret).update(doc.payload.plainToken).digest("hex");
    }
    break;
  }
  default:
    throw new Error(`no signer for ${a.provider}`);
}
console.log(JSON.stringify({ ...out, headers, body }));
