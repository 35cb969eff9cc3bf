// The peer's intake: Express, Standard Webhooks verification with the `standardwebhooks` package,
// and a BullMQ job per verified request, job id = webhook-id (BullMQ ignores an add whose id exists,
// which is its dedup). The 202 is sent after Redis acknowledged the job; Redis runs with
// `appendfsync always`, so that acknowledgement means the job is in an fsynced AOF.
//
// Env: REDIS_SOCKET (unix socket path), WEBHOOK_SECRET (whsec_...), PORT (0 = any; the bound port is
// printed as {"port":N} on stdout).
import express from "express";
import { Queue } from "bullmq";
import { Webhook } from "standardwebhooks";

const connection = { path: process.env.REDIS_SOCKET, maxRetriesPerRequest: null };
const queue = new Queue("runs", { connection });
const wh = new Webhook(process.env.WEBHOOK_SECRET);

const app = express();
app.disable("x-powered-by");
app.post("/webhook", express.raw({ type: "*/*", limit: "1mb" }), async (req, res) => {
  let payload;
  try {
    payload = wh.verify(req.body, req.headers);
  } catch {
    res.status(401).json({ error: "signature_invalid" });
    return;
  }
  try {
    const id = req.header("webhook-id");
    await queue.add("start", payload, {
      jobId: id,
      attempts: 8,
      backoff: { type: "exponential", delay: 1000 },
      removeOnComplete: { age: 24 * 3600 }, // keep ids 24 h: the dedup window
      removeOnFail: { age: 7 * 24 * 3600 },
    });
    res.status(202).json({ outcome: "delivered", jobId: id });
  } catch {
    res.status(503).json({ error: "service_unavailable" });
  }
});

const server = app.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
server.keepAliveTimeout = 60_000;

const stop = async () => {
  server.close();
  await queue.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
