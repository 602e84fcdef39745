// A person at a real browser, for tests/oauth_oidc.rs: headless Chromium (the system's, driven
// by puppeteer-core, which downloads no browser) opens the authorization URL it is given, signs
// in on the authorization server's own login page, approves its consent page, and follows the
// redirect back to the client's loopback callback.
//
//   BROWSER="node browser_login.mjs" mcp login NAME          (the URL comes last)
//
// PUPPETEER_CORE names puppeteer-core's entry and CHROMIUM the browser. With
// BROWSER_LOGIN_PASTE=1 the redirect to 127.0.0.1 is not loaded: its address is printed on
// stdout instead, as a person on another machine would copy it from the address bar. Only
// loopback addresses are ever requested (a stylesheet's web font, say, is refused).
import { pathToFileURL } from "node:url";

const url = process.argv[process.argv.length - 1];
const paste = process.env.BROWSER_LOGIN_PASTE === "1";
const { default: puppeteer } = await import(pathToFileURL(process.env.PUPPETEER_CORE).href);

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
});
const done = (code) => browser.close().finally(() => process.exit(code));
const timer = setTimeout(() => {
  console.error("browser_login: the login did not finish within 60 s");
  done(1);
}, 60000);

try {
  const page = await browser.newPage();
  let landed = null;
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const target = new URL(req.url());
    if (target.hostname !== "127.0.0.1" && target.hostname !== "localhost") {
      return req.abort();
    }
    if (target.pathname === "/callback" && req.isNavigationRequest()) {
      landed = req.url();
      if (paste) return req.abort();
    }
    return req.continue();
  });
  await page.goto(url, { waitUntil: "load" }).catch(() => {});
  for (let step = 0; step < 6 && !landed; step += 1) {
    if (await page.$("input[name=login]")) {
      await page.type("input[name=login]", "mcp-user");
      await page.type("input[name=password]", "a password");
    } else if (!(await page.$("button[type=submit]"))) {
      throw new Error(`nothing to do on ${page.url()}: ${await page.title()}`);
    }
    await Promise.all([
      page.waitForNavigation({ waitUntil: "load" }).catch(() => {}),
      page.click("button[type=submit]"),
    ]);
  }
  if (!landed) throw new Error(`never redirected to the callback (at ${page.url()})`);
  if (paste) {
    process.stdout.write(`${landed}\n`);
  } else {
    // The client's page says the authorization went back to it.
    const text = await page.evaluate(() => document.body.innerText);
    if (!text.includes("close this tab")) throw new Error(`the callback answered: ${text}`);
  }
  clearTimeout(timer);
  await done(0);
} catch (e) {
  console.error(`browser_login: ${e.message}`);
  clearTimeout(timer);
  await done(1);
}
