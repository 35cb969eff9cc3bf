// The peer's worker: starts each job's run by POSTing to the run host (the same stand-in host the
// bridge uses, RUN_HOST_URL/v1/runs), Idempotency-Key = the job id (the webhook-id). A non-2xx or a
// network error throws, and BullMQ retries the job with exponential backoff (set on the job).
//
// Env: REDIS_SOCKET, RUN_HOST_URL, CONCURRENCY (default 32).
import { Worker } from "bullmq";

const connection = { path: process.env.REDIS_SOCKET, maxRetriesPerRequest: null };
const base = process.env.RUN_HOST_URL;

const worker = new Worker(
  "runs",
  async (job) => {
    const res = await fetch(`${base}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": job.id },
      body: JSON.stringify({ workflowId: "bench", inputs: { trigger: job.data } }),
    });
    if (!res.ok) {
      throw new Error(`run host answered ${res.status}`);
    }
    return (await res.json()).runId;
  },
  { connection, concurrency: Number(process.env.CONCURRENCY || 32) },
);
process.stdout.write(JSON.stringify({ worker: "ready" }) + "\n");

const stop = async () => {
  await worker.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
