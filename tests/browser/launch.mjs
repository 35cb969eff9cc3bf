// One place for how every browser test starts Debian's chromium (no download, no sandbox in CI).
import { chromium } from 'playwright-core';

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
           '--disable-background-networking'],
  });
}

// The JSON argument the GoogleTest side passes as argv[2].
export function testArgument() {
  return process.argv[2] ? JSON.parse(process.argv[2]) : {};
}
