// Fills and submits an HTML form like a person would, then reports where the browser ended up.
// Argument: {pageUrl, formSelector?, fields: {name: value | [values]}, files?: {name: {filename,
// mimeType, content}}, waitForFilled?: [selector of an input a page script fills], expectUrl}.
// Prints {ok, url, title, navigations: [{url, status, method}]} — every document response, so
// the test sees the form post's own status (the 303) as well as the page it led to.
import { launchBrowser, testArgument } from './launch.mjs';

const arg = testArgument();
const browser = await launchBrowser();
const navigations = [];
try {
  const page = await browser.newPage();
  page.on('response', (r) => {
    if (r.request().resourceType() === 'document') {
      navigations.push({ url: r.url(), status: r.status(), method: r.request().method() });
    }
  });
  await page.goto(arg.pageUrl);
  const form = arg.formSelector || 'form';
  for (const selector of arg.waitForFilled || []) {
    await page.waitForFunction((s) => document.querySelector(s).value !== '', selector,
                               { timeout: 10000 });
  }
  for (const [name, value] of Object.entries(arg.fields || {})) {
    const field = page.locator(`${form} [name="${name}"]`);
    if ((await field.evaluate((e) => e.tagName)) === 'SELECT') {
      await field.selectOption(value);
    } else {
      await field.fill(value);
    }
  }
  for (const [name, f] of Object.entries(arg.files || {})) {
    await page.locator(`${form} [name="${name}"]`).setInputFiles(
      { name: f.filename, mimeType: f.mimeType, buffer: Buffer.from(f.content) });
  }
  await Promise.all([
    page.waitForURL(arg.expectUrl, { timeout: 15000 }),
    page.locator(`${form} [type="submit"]`).click(),
  ]);
  await page.waitForLoadState('load');
  console.log(JSON.stringify({ ok: true, url: page.url(), title: await page.title(), navigations }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: String(e), navigations }));
  process.exitCode = 1;
} finally {
  await browser.close();
}
