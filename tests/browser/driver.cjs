// A Playwright driver the Python tests talk to: one JSON command a line on stdin, one JSON
// answer a line on stdout. It drives Debian's Chromium (never a browser a tool downloads),
// headless, with a fresh profile and no background networking.
//
//   PLAYWRIGHT_CORE  the playwright-core package directory
//   CHROMIUM         the browser executable (/usr/bin/chromium)
//   PROFILE          an empty directory for the profile
"use strict";

const readline = require("node:readline");
const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

async function main() {
  const context = await chromium.launchPersistentContext(process.env.PROFILE, {
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 1000 },
  });
  const page = context.pages()[0] || (await context.newPage());
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  let reloads = 0;
  page.on("load", () => (reloads += 1));
  let requests = 0; // what the page asked of the daemon: bounded under a burst of events
  const sent = [];
  page.on("request", (request) => {
    requests += 1;
    sent.push({ url: request.url(), method: request.method(), headers: request.headers() });
  });

  const ops = {
    goto: async ({ url }) => {
      const response = await page.goto(url);
      return { url: page.url(), status: response ? response.status() : null };
    },
    // wait until a JavaScript expression is truthy in the page. Polled with evaluate (the
    // DevTools protocol's, which the page's CSP allows), not waitForFunction: that builds a
    // function from the string inside the page, which the CSP (no 'unsafe-eval') refuses.
    wait: async ({ expr, timeout }) => {
      const deadline = Date.now() + (timeout || 15000);
      for (;;) {
        const value = await page.evaluate(expr).catch((error) => {
          if (/Execution context was destroyed|navigation/i.test(String(error))) return null;
          throw error;
        });
        if (value) return value === true ? true : typeof value === "object" ? "found" : value;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${expr}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    eval: async ({ expr }) => page.evaluate(expr),
    fill: async ({ selector, text }) => page.fill(selector, text),
    click: async ({ selector }) => page.click(selector),
    screenshot: async ({ path }) => {
      await page.screenshot({ path, fullPage: false });
      return path;
    },
    // one element, whole (the plan's panel for the docs' picture)
    screenshotOf: async ({ selector, path }) => {
      await page.locator(selector).screenshot({ path });
      return path;
    },
    // the browser's clock set off by ms from the machine's, before the page loads: the
    // page must count from the board's clock, not this one
    skewClock: async ({ ms }) => {
      await context.clock.install({ time: Date.now() + ms });
      await context.clock.resume();
      return page.evaluate("Date.now()");
    },
    // the network gone and back: what the page sees of a connection cut (its stream ends)
    offline: async ({ on }) => context.setOffline(Boolean(on)),
    // every request the page made, with its headers: what it sent, and to where
    sent: async () => sent.splice(0),
    problems: async () => problems.splice(0),
    loads: async () => reloads,
    requests: async () => requests,
  };

  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    const command = JSON.parse(line);
    let answer;
    try {
      if (command.op === "close") break;
      const value = await ops[command.op](command);
      answer = { ok: true, value: value === undefined ? null : value };
    } catch (error) {
      answer = { ok: false, error: String(error && error.message ? error.message : error) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  await context.close();
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ ok: false, error: `driver: ${error.message}` }) + "\n");
  process.exit(1);
});
