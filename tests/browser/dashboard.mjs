// Drives the /ui dashboard of a running `wopbridge serve` end to end (tests/integration/dashboard_test.cpp):
// sign in with an API key, pause and resume a subscription, send an event whose workflow cannot start
// so it dead-letters, make the workflow startable, replay the dead letter from the page, re-activate
// the subscription and open the replayed run; a change made outside the page arrives over the
// change stream (Server-Sent Events). Prints one JSON object on its last line.
//
// Argument: {url, apiKey, subscription, ingestUrl, workflowScript, screenshot, overviewScreenshot}
import { writeFileSync, chmodSync } from 'node:fs';
import { launchBrowser, testArgument } from './launch.mjs';

const arg = testArgument();
const result = { ok: false, steps: [] };
const step = (name) => result.steps.push(name);
const T = 15000; // per wait; the whole flow takes a few seconds

const browser = await launchBrowser();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const consoleErrors = [];
  let expect401 = false; // the deliberate wrong-key sign-in logs one failed (401) request
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expect401 && m.text().includes('status of 401')) {
      expect401 = false;
      return;
    }
    consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const keyInUrl = [];
  page.on('request', (r) => { if (r.url().includes(arg.apiKey)) keyInUrl.push(r.url()); });

  await page.goto(`${arg.url}/ui`);
  step('loaded');

  // A wrong key is refused with a message; the right one signs in.
  expect401 = true;
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor({ timeout: T });
  await page.getByLabel('API key').fill(arg.apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const row = page.locator(`tr[data-subscription="${arg.subscription}"]`);
  await row.waitFor({ timeout: T });
  result.keyInSessionStorage = await page.evaluate(() => sessionStorage.getItem('wopbridge.apiKey'));
  step('signed-in');

  // Pause from the list; the state badge follows.
  await row.getByRole('button', { name: `Pause ${arg.subscription}` }).click();
  await row.locator('.badge', { hasText: 'paused' }).waitFor({ timeout: T });
  result.pausedSeen = true;
  step('paused');
  await row.getByRole('button', { name: `Resume ${arg.subscription}` }).click();
  await row.locator('.badge', { hasText: 'active' }).first().waitFor({ timeout: T });
  step('resumed');

  // Live over Server-Sent Events: once the change stream is up (the indicator says Live, and the
  // view then re-reads only every 15 s on its own), a change made elsewhere shows within 5 s.
  await page.locator('#live-text', { hasText: /^Live/ }).waitFor({ timeout: T });
  const outside = (state) => fetch(`${arg.url}/v1/trigger-subscriptions/${encodeURIComponent(arg.subscription)}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${arg.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ state }),
  });
  const pushedAt = Date.now();
  result.outsidePauseStatus = (await outside('paused')).status;
  await row.locator('.badge', { hasText: 'paused' }).waitFor({ timeout: 5000 });
  result.pushedInMs = Date.now() - pushedAt;
  result.outsideResumeStatus = (await outside('active')).status;
  await row.locator('.badge', { hasText: 'active' }).first().waitFor({ timeout: 5000 });
  step('pushed');

  // One inbound event. Its workflow command does not exist yet: every attempt fails and the
  // delivery dead-letters (the subscription with it).
  const ingest = await fetch(arg.ingestUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': 'msg_dashboard_1' },
    body: JSON.stringify({ order: 42 }),
  });
  result.ingestStatus = ingest.status;
  const ingestBody = await ingest.json();
  result.firstRunId = ingestBody.runId;

  // The live list shows the dead letter without a reload.
  await row.locator('td[data-col="dead-letters"]', { hasText: '1' }).waitFor({ timeout: T });
  await page.screenshot({ path: arg.overviewScreenshot });
  await row.getByRole('link', { name: arg.subscription }).click();
  const deadRow = page.locator('tr[data-attempt]').first();
  await deadRow.waitFor({ timeout: T });
  result.attemptEventId = await deadRow.getAttribute('data-attempt');
  result.deadLetterReason = (await deadRow.locator('.reason').textContent()).trim();
  await page.locator('#sub-state .badge', { hasText: 'dead-lettered' }).waitFor({ timeout: T });
  result.deadLetterSeen = true;
  step('dead-letter');

  // The workflow can start now; replay it from the page. The subscription is dead-lettered, so the
  // replay is held until it is re-activated.
  writeFileSync(arg.workflowScript, '#!/bin/sh\ncat >/dev/null\nexit 0\n');
  chmodSync(arg.workflowScript, 0o755);
  await deadRow.getByRole('button', { name: `Replay ${result.attemptEventId}` }).click();
  const replayed = page.locator(`tr[data-attempt="${result.attemptEventId}"] a.replayed`);
  await replayed.waitFor({ timeout: T });
  result.replayRunId = (await replayed.textContent()).replace('→', '').trim();
  result.toast = (await page.locator('#toast').textContent()).trim();
  step('replayed');
  await page.getByRole('button', { name: `Re-activate ${arg.subscription}` }).click();
  await page.locator('#sub-state .badge', { hasText: 'active' }).waitFor({ timeout: T });
  step('re-activated');
  // The replayed delivery shows up delivered in the deliveries table, with its run (the dead
  // letter's row shows the same state; it is checked after the reload below).
  await page.locator('table tr:not([data-attempt])', { hasText: result.replayRunId })
    .locator('.badge', { hasText: 'delivered' }).waitFor({ timeout: T });
  const toast = page.locator('#toast');
  await toast.evaluate((el) => { el.hidden = true; }); // a clean picture
  await page.screenshot({ path: arg.screenshot, fullPage: true });
  await toast.evaluate((el) => { el.hidden = false; });
  step('delivered');

  // After a reload the dead letter still reads as replayed, with its replay's state: the page
  // learns it from the bridge, not from this tab's memory.
  await page.reload();
  const afterReload = page.locator(`tr[data-attempt="${result.attemptEventId}"]`);
  await afterReload.locator('a.replayed').waitFor({ timeout: T });
  result.replayRunIdAfterReload =
    (await afterReload.locator('a.replayed').textContent()).replace('→', '').trim();
  await afterReload.locator('.replay-status .badge', { hasText: 'delivered' })
    .waitFor({ timeout: T });
  result.replayStatusAfterReload = 'delivered';
  step('reloaded');

  // Open the run: it completed and says which dead letter it replays.
  await replayed.click();
  await page.locator('#run-status .badge', { hasText: 'completed' }).waitFor({ timeout: T });
  result.runStatus = 'completed';
  result.replayOfText = (await page.locator('#replay-of').textContent()).trim();
  result.runEventTypes = await page.locator('table tbody th').allTextContents();
  step('run');

  // Signing out forgets the key.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: T });
  result.keyAfterSignOut = await page.evaluate(() => sessionStorage.getItem('wopbridge.apiKey'));
  step('signed-out');

  result.consoleErrors = consoleErrors;
  result.keyInUrl = keyInUrl;
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err).slice(0, 2000);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
