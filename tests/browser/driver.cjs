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

  const ops = {
    goto: async ({ url }) => {
      const response = await page.goto(url);
      return { url: page.url(), status: response ? response.status() : null };
    },
    // wait until a JavaScript expression (a function body's value) is truthy in the page
    wait: async ({ expr, timeout }) =>
      (await page.waitForFunction(expr, null, { timeout: timeout || 15000, polling: 100 })).jsonValue(),
    eval: async ({ expr }) => page.evaluate(expr),
    fill: async ({ selector, text }) => page.fill(selector, text),
    click: async ({ selector }) => page.click(selector),
    screenshot: async ({ path }) => {
      await page.screenshot({ path, fullPage: false });
      return path;
    },
    problems: async () => problems.splice(0),
    loads: async () => reloads,
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
