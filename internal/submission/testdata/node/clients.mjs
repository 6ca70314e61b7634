// Run by TestNodeClients: the official Resend Node SDK and nodemailer,
// pointed at a Mailroom node (RESEND_BASE_URL, SUBMISSION_PORT). Exits
// non-zero, naming the step, on the first surprise.
import { Resend } from "resend";
import nodemailer from "nodemailer";
import { readFileSync } from "node:fs";
import http from "node:http";

const env = process.env;
const key = env.MAILROOM_KEY;
const from = "onboarding@mailroom.test";
const to = "delivered@mailroom.test";
const resend = new Resend(key);

function check(step, ok, detail) {
  if (!ok) {
    console.error(`${step}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
}

const email = {
  from, to, subject: "From the Node SDK", text: "Hello",
  tags: [{ name: "campaign", value: "node" }],
  attachments: [{ filename: "a.txt", content: Buffer.from("hello"), contentType: "text/plain" }],
};
const first = await resend.emails.send(email, { idempotencyKey: "node-1" });
check("send", first.data?.id && !first.error, first);
const again = await resend.emails.send(email, { idempotencyKey: "node-1" });
check("idempotent retry", again.data?.id === first.data.id, again);

const got = await resend.emails.get(first.data.id);
check("get", got.data?.id === first.data.id && got.data.subject === "From the Node SDK", got);
const list = await resend.emails.list();
check("list", list.data?.data?.some((e) => e.id === first.data.id), list);

const sched = await resend.emails.send({ from, to, subject: "later", text: "x", scheduledAt: "in 1 hour" });
check("scheduled send", sched.data?.id, sched);
const upd = await resend.emails.update({ id: sched.data.id, scheduledAt: new Date(Date.now() + 7200e3).toISOString() });
check("update", !upd.error, upd);
const cancel = await resend.emails.cancel(sched.data.id);
check("cancel", !cancel.error, cancel);

const batch = await resend.batch.send([{ from, to, subject: "b1", text: "x" }, { from, to, subject: "b2", text: "y" }]);
check("batch", batch.data?.data?.length === 2, batch);

const bad = await resend.emails.send({ to, subject: "no from", text: "x" });
check("error names the cause", bad.error?.name === "missing_from" && /from/.test(bad.error.message) && bad.error.statusCode === 400, bad);

const dom = await resend.domains.create({ name: "node-sdk.example" });
check("domain create", dom.data?.id && dom.data.name === "node-sdk.example", dom);
const doms = await resend.domains.list();
check("domain list", doms.data?.data?.some((d) => d.id === dom.data.id), doms);
check("domain remove", !(await resend.domains.remove(dom.data.id)).error, "remove");

const k = await resend.apiKeys.create({ name: "node", permission: "sending_access" });
check("api key create", k.data?.token, k);
const ks = await resend.apiKeys.list();
check("api key list", ks.data?.data?.length >= 2, ks);
check("api key remove", !(await resend.apiKeys.remove(k.data.id)).error, "remove");

// Webhooks: a receiver, Svix-style signatures on, the SDK's verify.
let resolveHook;
const hook = new Promise((r) => (resolveHook = r));
const srv = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => { res.end("ok"); resolveHook({ headers: req.headers, body }); });
}).listen(0, "127.0.0.1");
await new Promise((r) => srv.once("listening", r));
const wh = await resend.webhooks.create({ endpoint: `http://127.0.0.1:${srv.address().port}/hook`, events: ["email.delivered"] });
check("webhook create", wh.data?.id && wh.data.signing_secret, wh);
const base = env.RESEND_BASE_URL;
const auth = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
let r = await fetch(`${base}/webhooks/${wh.data.id}`, { method: "PATCH", headers: auth, body: JSON.stringify({ svix_signatures: true }) });
check("svix on", r.ok, await r.text());
r = await fetch(`${base}/webhooks/deliveries`, { method: "POST", headers: auth, body: JSON.stringify({ webhook_id: wh.data.id }) });
check("test delivery", r.ok, await r.text());
const h = await hook;
srv.close();
try {
  resend.webhooks.verify({ payload: h.body, webhookSecret: wh.data.signing_secret,
    headers: { id: h.headers["webhook-id"], timestamp: h.headers["webhook-timestamp"], signature: h.headers["webhook-signature"] } });
} catch (e) {
  check("webhook verify", false, String(e));
}

// nodemailer over STARTTLS with the API key as the password.
const transport = nodemailer.createTransport({
  host: "127.0.0.1", port: Number(env.SUBMISSION_PORT), secure: false, requireTLS: true,
  auth: { user: "apikey", pass: key }, tls: { ca: readFileSync(env.CA_FILE), servername: "localhost" },
});
const info = await transport.sendMail({
  from, to, subject: "From nodemailer", text: "Hello", html: "<p>Hello</p>",
  headers: { "Idempotency-Key": "nodemailer-1", "X-Mailroom-Tags": "via=nodemailer" },
  attachments: [{ filename: "n.txt", content: "hi there" }],
});
check("nodemailer", /id=em_/.test(info.response), info);
console.log("ok");
