// The wopbridge dashboard: subscriptions, their deliveries and dead letters, runs. Hash routes
// (#/, #/subscriptions/ID, #/runs/ID). The current view re-reads when the bridge says the tenant
// changed (GET /v1/ops/changes, Server-Sent Events), and every 15 s besides (writes on other
// nodes of a cluster, ages); while that stream is down it polls every 2 s and reconnects.

import { api, apiKey, setApiKey, ApiError, followChanges } from './api.js';
import { h, clear, ago, badge, time, table } from './dom.js';

const POLL_MS = 2000;        // while the change stream is down
const LIVE_POLL_MS = 15000;  // while it is up
const RECONNECT_MS = 2000;
const $ = (id) => document.getElementById(id);

let current = null;   // the mounted view: { refresh: async () => void }
let timer = 0;
let generation = 0;   // bumps on every navigation so stale refreshes are dropped
let streaming = false;          // the change stream is open
let changes = null;             // its AbortController while it runs
let refreshing = null;          // the refresh in flight (a Promise)
let again = false;              // a change arrived during it: refresh once more after
const replays = new Map(); // attemptEventId -> { runId, status } replayed from this tab, until the
                           // bridge's view of the replay arrives

// ---- chrome ---------------------------------------------------------------------------------------

let toastTimer = 0;
function toast(message, kind = 'info', link = null) {
  const el = clear($('toast'));
  el.className = `toast show ${kind}`;
  el.appendChild(document.createTextNode(message));
  if (link) {
    el.appendChild(document.createTextNode(' '));
    el.appendChild(h('a', { href: link.href }, link.text));
  }
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 8000);
}

function setLive(ok, text) {
  const live = $('live');
  live.hidden = false;
  live.classList.toggle('down', !ok);
  $('live-text').textContent = text;
}

function describe(err) {
  if (err instanceof ApiError) {
    if (err.status === 403) {
      return 'This API key lacks a required scope.';
    }
    return `${err.message} (${err.status}${err.code ? ` ${err.code}` : ''})`;
  }
  return 'The bridge could not be reached.';
}

// ---- sign in / out --------------------------------------------------------------------------------

function showSignIn(message = '') {
  stopPolling();
  stopChanges();
  current = null;
  $('view').hidden = true;
  clear($('view'));
  $('sign-out').hidden = true;
  $('live').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('api-key').focus();
}

async function signIn(event) {
  event.preventDefault();
  const input = $('api-key');
  const key = input.value.trim();
  if (!key) {
    $('signin-error').textContent = 'Enter an API key.';
    return;
  }
  const button = $('signin-submit');
  button.disabled = true;
  try {
    await api.overview(key);
    setApiKey(key);
    input.value = '';
    $('signin-error').textContent = '';
    route();
  } catch (err) {
    $('signin-error').textContent = err instanceof ApiError && err.status === 401
      ? 'That API key was not accepted.' : describe(err);
  } finally {
    button.disabled = false;
  }
}

function signOut() {
  setApiKey('');
  replays.clear();
  showSignIn('Signed out.');
}

// ---- polling --------------------------------------------------------------------------------------

function stopPolling() {
  clearTimeout(timer);
  timer = 0;
}

// Refreshes the current view now; a call while one runs makes that one run again after.
async function tick() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = refresh().finally(() => { refreshing = null; });
  await refreshing;
  if (again) {
    again = false;
    await tick();
  }
}

async function refresh() {
  stopPolling();
  const gen = generation;
  if (!current || document.hidden) {
    return;
  }
  try {
    await current.refresh();
    for (const t of document.querySelectorAll('#view time[datetime]')) {
      t.textContent = ago(t.dateTime); // rows that did not change still age
    }
    if (gen === generation) {
      const how = streaming ? 'Live' : 'Polling';
      setLive(true, `${how} · updated ${new Date().toLocaleTimeString()}`);
    }
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setApiKey('');
      showSignIn('The API key was refused. Sign in again.');
      return;
    }
    setLive(false, `Offline · ${describe(err)}`);
  }
  if (gen === generation && current) {
    timer = setTimeout(tick, streaming ? LIVE_POLL_MS : POLL_MS);
  }
}

// ---- the change stream ----------------------------------------------------------------------------

function stopChanges() {
  if (changes) {
    changes.abort();
    changes = null;
  }
  streaming = false;
}

// Keeps GET /v1/ops/changes open while signed in and visible; every frame refreshes the view.
async function startChanges() {
  if (changes || !apiKey() || document.hidden) {
    return;
  }
  const ctl = new AbortController();
  changes = ctl;
  try {
    await followChanges((name) => {
      if (name === 'ready') {
        streaming = true;
      }
      tick();
    }, ctl.signal);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setApiKey('');
      showSignIn('The API key was refused. Sign in again.');
      return;
    }
  }
  if (changes !== ctl) {
    return; // stopped on purpose (sign out, hidden tab)
  }
  changes = null;
  streaming = false;
  setTimeout(startChanges, RECONNECT_MS); // polling covers the gap
}

// Runs an action (button click), then refreshes at once.
async function act(button, fn) {
  button.disabled = true;
  try {
    await fn();
  } catch (err) {
    toast(describe(err), 'error');
  } finally {
    button.disabled = false;
  }
  tick();
}

// ---- routing --------------------------------------------------------------------------------------

function route() {
  if (!apiKey()) {
    showSignIn();
    return;
  }
  $('signin').hidden = true;
  $('sign-out').hidden = false;
  const view = clear($('view'));
  view.hidden = false;
  generation += 1;
  const hash = location.hash.replace(/^#/, '');
  const parts = hash.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'subscriptions' && parts[1]) {
    current = subscriptionView(view, parts[1]);
  } else if (parts[0] === 'runs' && parts[1]) {
    current = runView(view, parts[1]);
  } else {
    current = overviewView(view);
  }
  startChanges();
  tick();
}

const subLink = (id) => `#/subscriptions/${encodeURIComponent(id)}`;
const runLink = (id) => `#/runs/${encodeURIComponent(id)}`;

// Replaces `slot`'s content only when the data changed, so focus and clicks survive refreshes.
function renderInto(slot, data, render) {
  const json = JSON.stringify(data);
  if (slot.dataset.json === json) {
    return;
  }
  slot.dataset.json = json;
  const active = document.activeElement;
  const focusKey = active && slot.contains(active) ? active.dataset.focus : null;
  clear(slot).appendChild(render(data));
  if (focusKey) {
    const again = slot.querySelector(`[data-focus="${CSS.escape(focusKey)}"]`);
    if (again) {
      again.focus();
    }
  }
}

function stateButton(sub, after) {
  const id = sub.subscriptionId;
  const to = sub.state === 'active' ? 'paused' : 'active';
  const label = sub.state === 'active' ? 'Pause' : sub.state === 'paused' ? 'Resume' : 'Re-activate';
  const b = h('button.small', {
    type: 'button',
    'aria-label': `${label} ${id}`,
    dataset: { focus: `state-${id}` },
  }, label);
  b.addEventListener('click', () => act(b, async () => {
    const r = await api.setState(id, to);
    toast(`${id} is now ${r.subscription.state}.`, 'ok');
    if (after) {
      after();
    }
  }));
  return b;
}

// ---- views ----------------------------------------------------------------------------------------

function overviewView(root) {
  const tiles = h('div.tiles');
  const list = h('div');
  root.append(
    h('div.head', {}, h('h1', {}, 'Subscriptions')),
    tiles,
    h('section.card', { 'aria-labelledby': 'subs-title' },
      h('h2.visually-hidden', { id: 'subs-title' }, 'All subscriptions'), list));
  document.title = 'Subscriptions · wopbridge';

  return {
    async refresh() {
      const data = await api.overview();
      const subs = data.subscriptions || [];
      const by = { active: 0, paused: 0, failed: 0, 'dead-lettered': 0 };
      let dead = 0;
      let due = 0;
      let inFlight = 0;
      for (const s of subs) {
        by[s.subscription.state] = (by[s.subscription.state] || 0) + 1;
        dead += s.deadLetters || 0;
        due += s.counts.due || 0;
        inFlight += s.counts.inFlight || 0;
      }
      renderInto(tiles, { by, dead, due, inFlight }, () => h('div.tile-row', {},
        tile('Active', by.active, 'active'),
        tile('Paused', by.paused, 'paused'),
        tile('Failed', by.failed, 'failed'),
        tile('Dead-lettered', by['dead-lettered'], 'dead-lettered'),
        tile('Dead letters', dead, dead ? 'warn' : ''),
        tile('Due / in flight', `${due} / ${inFlight}`, '')));
      renderInto(list, subs, () => table('Subscriptions with their state and deliveries',
        ['Subscription', 'Source', 'Workflow', 'State', 'Pending', 'Delivered', 'Dead letters',
          'Last delivery', 'Actions'],
        subs.map((s) => {
          const sub = s.subscription;
          const last = s.lastDelivery;
          return h('tr', { dataset: { subscription: sub.subscriptionId } },
            h('th', { scope: 'row' }, h('a', { href: subLink(sub.subscriptionId) }, sub.subscriptionId)),
            h('td', {}, sub.source, s.connector ? h('span.muted', {}, ` · ${s.connector}`) : null),
            h('td', {}, s.workflowId),
            h('td', {}, badge(sub.state)),
            h('td.num', {}, s.counts.pending + s.counts.held + s.counts.inFlight),
            h('td.num', {}, s.counts.delivered),
            h('td.num', { dataset: { col: 'dead-letters' } },
              s.deadLetters ? h('strong.warn-text', {}, s.deadLetters) : '0'),
            h('td', {}, last ? [badge(last.status), ' ', time(last.updatedAt || last.receivedAt)] : '—'),
            h('td', {}, stateButton(sub)));
        }),
        'No subscriptions yet. Add them in the config file or with POST /v1/trigger-subscriptions.'));
    },
  };
}

function tile(label, value, kind) {
  return h(`div.tile${kind ? `.t-${kind}` : ''}`, {},
    h('span.tile-value', {}, String(value)), h('span.tile-label', {}, label));
}

function subscriptionView(root, id) {
  const title = h('div.head');
  const meta = h('div');
  const dead = h('div');
  const deliveries = h('div');
  const job = h('p.job', { role: 'status', 'aria-live': 'polite' });
  const replayAll = h('button', { type: 'button', id: 'replay-all' }, 'Replay all');
  let jobId = '';
  replayAll.addEventListener('click', () => act(replayAll, async () => {
    const r = await api.replayAll(id);
    jobId = r.jobId;
    job.textContent = `Replay job ${jobId} started…`;
  }));
  root.append(
    h('nav', { 'aria-label': 'Breadcrumb' }, h('a.back', { href: '#/' }, '← All subscriptions')),
    title, meta,
    h('section.card', { 'aria-labelledby': 'dl-title' },
      h('div.section-head', {}, h('h2', { id: 'dl-title' }, 'Dead letters'), replayAll),
      job, dead),
    h('section.card', { 'aria-labelledby': 'dlv-title' },
      h('h2', { id: 'dlv-title' }, 'Recent deliveries'), deliveries));
  document.title = `${id} · wopbridge`;

  return {
    async refresh() {
      const [view, page] = await Promise.all([api.subscription(id), api.deadLetterView(id)]);
      const sub = view.subscription;
      renderInto(title, sub, () => h('div.head', {},
        h('h1', {}, sub.subscriptionId),
        h('span', { id: 'sub-state' }, badge(sub.state)),
        h('span.spacer'),
        stateButton(sub)));
      renderInto(meta, sub, () => h('dl.meta', {},
        h('dt', {}, 'Source'), h('dd', {}, sub.source),
        h('dt', {}, 'Dedup'), h('dd', {}, sub.dedupEnabled ? 'on' : 'off'),
        h('dt', {}, 'Retries'), h('dd', {}, sub.retryPolicy
          ? `${sub.retryPolicy.maxAttempts} attempts, ${sub.retryPolicy.backoff}` : '—'),
        sub.webhookId ? [h('dt', {}, 'Webhook id'), h('dd', {}, h('code', {}, sub.webhookId))] : null));
      const entries = page.deadLetters || [];
      const items = entries.map((e) => e.deadLetter);
      replayAll.disabled = !items.some((d) => d.reason === 'retries_exhausted');
      // The bridge knows every replay (a reload, another tab, the CLI); this tab's own clicks
      // show until the bridge's answer includes them.
      const replayed = entries.map((e) => (e.replay
        ? { runId: e.replay.runId, status: e.replay.status }
        : replays.get(e.deadLetter.attemptEventId) || null));
      renderInto(dead, { items, replayed }, () => table('Dead letters, newest first',
        ['Dead-lettered', 'Attempt event', 'Reason', 'Attempt', 'State change', 'Replay'],
        items.map((d, i) => h('tr', { dataset: { attempt: d.attemptEventId } },
          h('td', {}, time(d.deadLetteredAt)),
          h('th', { scope: 'row' }, h('code', {}, d.attemptEventId)),
          h('td', {}, h('span.reason', {}, d.reason.replace('_', ' '))),
          h('td.num', {}, d.attempt ? d.attempt.attempt : '—'),
          h('td.nowrap', {}, d.stateChange ? `${d.stateChange.fromState} → ${d.stateChange.toState}` : '—'),
          h('td', {}, replayCell(id, d, replayed[i])))),
        'No dead letters.'));
      const dl = view.deliveries || [];
      renderInto(deliveries, dl, () => table('Recent deliveries, newest first',
        ['Delivery', 'Status', 'Attempts', 'Received', 'Updated', 'Run', 'Last error'],
        dl.map((d) => h('tr', {},
          h('th', { scope: 'row' }, h('code', {}, d.deliveryId)),
          h('td', {}, badge(d.status)),
          h('td.num', {}, d.attempts),
          h('td', {}, time(d.receivedAt)),
          h('td', {}, time(d.updatedAt)),
          h('td', {}, d.runId ? h('a', { href: runLink(d.runId) }, d.runId) : '—'),
          h('td.error-text', {}, d.lastError || ''))),
        'No deliveries yet.'));
      if (jobId) {
        const j = await api.replayJob(jobId);
        job.textContent = `Replay job ${j.jobId}: ${j.state} — ${j.replayed} of ${j.total} replayed, `
          + `${j.delivered} delivered, ${j.failed} failed.`;
        if (j.state !== 'running') {
          jobId = '';
        }
      }
    },
  };
}

function replayCell(subId, d, done) {
  if (d.reason !== 'retries_exhausted') {
    return h('span.muted', { title: 'Verification failures keep no content and cannot be replayed' },
      'not replayable');
  }
  const b = h('button.small', {
    type: 'button',
    'aria-label': `Replay ${d.attemptEventId}`,
    dataset: { focus: `replay-${d.attemptEventId}` },
  }, done ? 'Replay again' : 'Replay');
  b.addEventListener('click', () => act(b, async () => {
    const r = await api.replay(subId, d.attemptEventId);
    replays.set(d.attemptEventId, { runId: r.runId, status: r.outcome === 'held' ? 'held' : 'pending' });
    if (r.outcome === 'held') {
      toast('Replay held: it is delivered when the subscription is active again.', 'warn',
        { href: runLink(r.runId), text: r.runId });
    } else {
      toast('Replay accepted.', 'ok', { href: runLink(r.runId), text: r.runId });
    }
  }));
  return [b, done ? [' ', h('a.replayed', { href: runLink(done.runId) }, `→ ${done.runId}`),
    ' ', h('span.replay-status', { dataset: { status: done.status } }, badge(done.status))] : null];
}

function runView(root, runId) {
  const head = h('div');
  const meta = h('div');
  const events = h('div');
  const back = h('a.back', { href: '#/' }, '← All subscriptions');
  root.append(h('nav', { 'aria-label': 'Breadcrumb' }, back), head, meta,
    h('section.card', { 'aria-labelledby': 'ev-title' }, h('h2', { id: 'ev-title' }, 'Events'), events));
  document.title = `${runId} · wopbridge`;

  return {
    async refresh() {
      let run;
      try {
        run = await api.run(runId);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) {
          renderInto(head, null, () => h('div.head', {}, h('h1', {}, `Run ${runId}`),
            h('span', { id: 'run-status' }, badge('waiting'))));
          renderInto(meta, null, () => h('p.muted', {},
            'This run has not started yet: its delivery is pending, retrying or held.'));
          return;
        }
        throw err;
      }
      back.href = subLink(run.subscriptionId);
      back.textContent = `← ${run.subscriptionId}`;
      renderInto(head, run.status, () => h('div.head', {}, h('h1', {}, `Run ${run.runId}`),
        h('span', { id: 'run-status' }, badge(run.status))));
      renderInto(meta, run, () => h('dl.meta', {},
        h('dt', {}, 'Workflow'), h('dd', {}, run.workflowId),
        h('dt', {}, 'Subscription'), h('dd', {}, h('a', { href: subLink(run.subscriptionId) }, run.subscriptionId)),
        h('dt', {}, 'Delivery'), h('dd', {}, h('code', {}, run.deliveryId)),
        h('dt', {}, 'Created'), h('dd', {}, time(run.createdAt)),
        h('dt', {}, 'Updated'), h('dd', {}, time(run.updatedAt)),
        run.replayOf ? [h('dt', {}, 'Replay of'), h('dd', { id: 'replay-of' },
          'dead letter ', h('code', {}, run.replayOf.attemptEventId), ' of ',
          h('a', { href: subLink(run.replayOf.subscriptionId) }, run.replayOf.subscriptionId))] : null,
        run.upstreamRunId ? [h('dt', {}, 'Upstream run'), h('dd', {}, h('code', {}, run.upstreamRunId))] : null));
      const page = await api.runEvents(runId);
      const list = page.events || [];
      renderInto(events, list, () => table('The run\'s event log',
        ['Seq', 'Type', 'Time', 'Event id', 'Causation'],
        list.map((e) => h('tr', {},
          h('td.num', {}, e.sequence),
          h('th', { scope: 'row' }, e.type),
          h('td', {}, time(e.timestamp)),
          h('td', {}, h('code', {}, e.eventId)),
          h('td', {}, e.causationId ? h('code', {}, e.causationId) : '—'))),
        'No events yet.'));
    },
  };
}

// ---- start ----------------------------------------------------------------------------------------

$('signin-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', signOut);
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (document.hidden) {
    stopChanges(); // a hidden tab holds no connection; it catches up when shown
  } else if (current) {
    startChanges();
    tick();
  }
});
route();
