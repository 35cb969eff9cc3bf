// The REST client of the dashboard. The API key lives in sessionStorage (this tab only) and goes out
// only in the Authorization header of same-origin requests; it is never put in a URL.

const KEY = 'wopbridge.apiKey';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY) || '';
}

export function setApiKey(key) {
  if (key) {
    sessionStorage.setItem(KEY, key);
  } else {
    sessionStorage.removeItem(KEY);
  }
}

// Calls the bridge; resolves with the parsed JSON body (null for 204) or rejects with ApiError.
export async function call(method, path, body, key = apiKey()) {
  const headers = { Accept: 'application/json', Authorization: `Bearer ${key}` };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  if (res.status !== 204) {
    const text = await res.text();
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const code = data && typeof data.error === 'string' ? data.error : '';
    throw new ApiError(res.status, code, data && data.message);
  }
  return data;
}

const seg = encodeURIComponent;

export const api = {
  overview: (key) => call('GET', '/v1/ops/subscriptions', undefined, key),
  subscription: (id) => call('GET', `/v1/trigger-subscriptions/${seg(id)}`),
  setState: (id, state) => call('PATCH', `/v1/trigger-subscriptions/${seg(id)}`, { state }),
  deliveries: (id) => call('GET', `/v1/trigger-subscriptions/${seg(id)}/deliveries?limit=25`),
  deadLetters: (id) => call('GET', `/v1/trigger-subscriptions/${seg(id)}/dead-letters?limit=25`),
  // The same page, each dead letter with the delivery its replay created (wopbridge extension).
  deadLetterView: (id) => call('GET', `/v1/ops/subscriptions/${seg(id)}/dead-letters?limit=25`),
  replay: (id, attemptEventId) =>
    call('POST', `/v1/trigger-subscriptions/${seg(id)}/dead-letters/${seg(attemptEventId)}/replay`),
  replayAll: (id) => call('POST', `/v1/trigger-subscriptions/${seg(id)}/dead-letters/replay`, { all: true }),
  replayJob: (jobId) => call('GET', `/v1/replay-jobs/${seg(jobId)}`),
  run: (runId) => call('GET', `/v1/runs/${seg(runId)}`),
  runEvents: (runId) => call('GET', `/v1/runs/${seg(runId)}/events/poll?lastSequence=-1&timeout=1`),
};

// Follows GET /v1/ops/changes (Server-Sent Events) with fetch, so the key stays in the
// Authorization header (EventSource cannot send one). Calls onFrame(eventName) per frame until
// the stream ends or `signal` aborts; resolves when it ends, rejects with ApiError on a refusal.
export async function followChanges(onFrame, signal, key = apiKey()) {
  const res = await fetch('/v1/ops/changes', {
    headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}` },
    cache: 'no-store', credentials: 'omit', redirect: 'error', signal,
  });
  if (!res.ok) {
    throw new ApiError(res.status, '', `HTTP ${res.status}`);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return;
    }
    buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const name = frame.split('\n').find((line) => line.startsWith('event:'));
      if (name) {
        onFrame(name.slice(6).trim());
      }
    }
  }
}
