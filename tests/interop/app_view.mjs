// A person at a real browser, for tests/apps_browser.rs: headless Chromium (the system's,
// driven by puppeteer-core) opens the page `mcp app` serves, waits for the App to show its
// tool's result, presses its buttons, and looks at what the App can and cannot reach.
//
//   BROWSER="node app_view.mjs" mcp app TOOL        (the URL comes last)
//
// PUPPETEER_CORE names puppeteer-core's entry, CHROMIUM the browser, APP_VIEW_OUT the file the
// findings are written to (JSON). Only loopback addresses are ever requested.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const url = process.argv[process.argv.length - 1];
const { default: puppeteer } = await import(pathToFileURL(process.env.PUPPETEER_CORE).href);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
});
const report = { console: [] };
const finish = async (code) => {
  writeFileSync(process.env.APP_VIEW_OUT, JSON.stringify(report));
  await browser.close().catch(() => {});
  process.exit(code);
};
const timer = setTimeout(() => {
  report.error = "the App did not do its part within 60 s";
  finish(1);
}, 60000);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/;
try {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const target = new URL(req.url());
    if (target.protocol === "about:" || target.protocol === "data:" || target.hostname === "127.0.0.1") {
      return req.continue();
    }
    return req.abort();
  });
  const said = [];
  page.on("console", (m) => { said.push(m.text()); report.console.push(m.text()); });
  const saying = async (text) => {
    for (let i = 0; i < 200 && !said.some((s) => s.includes(text)); i += 1) {
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!said.some((s) => s.includes(text))) throw new Error(`the App never said ${text}`);
  };
  await page.goto(url, { waitUntil: "load" });
  // The View: the frame inside the sandbox proxy, once it has the App's page.
  let view = null;
  for (let i = 0; i < 400 && !view; i += 1) {
    view = page.frames().find((f) => f.url() === "about:srcdoc") ?? null;
    if (!view) await new Promise((r) => setTimeout(r, 50));
  }
  if (!view) throw new Error("the App's frame never appeared");
  const shown = () => document.querySelector("#server-time")?.textContent ?? "";
  await view.waitForFunction(
    (iso) => new RegExp(iso).test(document.querySelector("#server-time")?.textContent ?? ""),
    { timeout: 30000 }, ISO.source);
  report.first = await view.evaluate(shown);
  report.hostState = await page.evaluate(() => document.body.dataset.state);
  // Its button calls the tool on the server, through the host.
  await view.click("#get-time-btn");
  await view.waitForFunction(
    (first) => (document.querySelector("#server-time")?.textContent ?? first) !== first,
    { timeout: 30000 }, report.first);
  report.second = await view.evaluate(shown);
  // A message for the conversation, and a log line.
  await view.click("#send-message-btn");
  await saying("Message accepted");
  const logged = page.waitForResponse((r) => r.url().endsWith("/from-view")
    && (r.request().postData() ?? "").includes("notifications/message"));
  await view.click("#send-log-btn");
  await logged;
  // What the sandbox keeps it from: the host's page, and the network.
  report.host = await view.evaluate(() => {
    try { return window.top.document.title === undefined ? "unreadable" : "read"; } catch (_) { return "blocked"; }
  });
  // Its own origin's page (the proxy's), which nothing but its policy's connect-src 'none'
  // keeps it from (no-cors: no CORS rule in the way).
  report.network = await view.evaluate(async () => {
    try { await fetch(new URL("/sandbox", document.baseURI), { mode: "no-cors" }); return "fetched"; } catch (_) { return "blocked"; }
  });
  clearTimeout(timer);
  await finish(0);
} catch (e) {
  report.error = e.message;
  clearTimeout(timer);
  await finish(1);
}
