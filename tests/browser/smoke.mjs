// Proves the browser tooling works: opens a page, reads its title, prints one JSON line.
import { launchBrowser } from './launch.mjs';

const browser = await launchBrowser();
try {
  const page = await browser.newPage();
  await page.setContent('<title>wopbridge</title><p>ok</p>');
  console.log(JSON.stringify({ ok: true, title: await page.title(), version: browser.version() }));
} finally {
  await browser.close();
}
