// Signs one webhook as its provider does, with the provider's own SDK where one signs
// (GitHub: @octokit/webhooks-methods; Stripe: stripe's generateTestHeaderString) and the
// provider's documented recipe (node:crypto) where none does (Shopify, Linear, Mailgun).
// Argument: {"provider", "secret", "body", "timestamp"}. Prints {"headers": {...}, "body"} on one line.
import { createHmac } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import Stripe from "stripe";

const a = JSON.parse(process.argv[2]);
let headers = {};
let body = a.body;
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
  default:
    throw new Error(`no signer for ${a.provider}`);
}
console.log(JSON.stringify({ headers, body }));
