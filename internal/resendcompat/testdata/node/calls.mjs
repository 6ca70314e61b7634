// Run by TestNodeSDK (resendcompat_test.go): every method of the Resend
// Node SDK, called as a new user would, against a Mailroom node
// (RESEND_BASE_URL, MAILROOM_KEY). One JSON line per call:
// {"call":"contacts.get","ok":true} or {"call":…,"ok":false,"error":…}.
// A method of the SDK that has no entry below is reported as
// {"call":…,"missing":true}, so a newer SDK cannot add one unnoticed.
import { Resend } from "resend";
import { readFileSync } from "node:fs";
import http from "node:http";

const env = process.env;
const resend = new Resend(env.MAILROOM_KEY, { baseUrl: env.RESEND_BASE_URL });
const from = "onboarding@mailroom.test";
const to = "delivered@mailroom.test";
const s = {}; // ids the calls hand on to later ones
const uniq = Date.now().toString(36);

// Checks on an answer beyond "no error": the shape the SDK's types declare.
const isList = (d) => Array.isArray(d?.data);
const hasId = (d) => typeof d?.id === "string" && d.id !== "";

// verifyDelivery creates an endpoint on a local receiver, has Mailroom
// deliver a test event to it and checks it with the SDK's own verify.
async function verifyDelivery() {
  let got;
  const arrived = new Promise((r) => (got = r));
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => { res.end("ok"); got({ headers: req.headers, body }); });
  }).listen(0, "127.0.0.1");
  await new Promise((r) => srv.once("listening", r));
  try {
    const wh = await resend.webhooks.create({ endpoint: `http://127.0.0.1:${srv.address().port}/hook`, events: ["email.delivered"] });
    if (wh.error) return wh;
    const r = await fetch(`${env.RESEND_BASE_URL}/webhooks/deliveries`, { method: "POST",
      headers: { Authorization: `Bearer ${env.MAILROOM_KEY}`, "Content-Type": "application/json" }, body: JSON.stringify({ webhook_id: wh.data.id }) });
    if (!r.ok) return { error: { message: `test delivery: ${r.status} ${await r.text()}` } };
    const h = await Promise.race([arrived, new Promise((r) => setTimeout(() => r(null), 20000).unref())]);
    if (!h) return { error: { message: "no delivery arrived" } };
    const payload = resend.webhooks.verify({ payload: h.body, webhookSecret: wh.data.signing_secret,
      headers: { id: h.headers["svix-id"], timestamp: h.headers["svix-timestamp"], signature: h.headers["svix-signature"] } });
    s.loggedHook = wh.data.id; // its delivery log feeds webhooks.events.*
    return { data: payload, error: null };
  } finally {
    srv.closeAllConnections();
    srv.close();
  }
}

// mailroomAutomation makes an automation through Mailroom's own route (its
// YAML), when the SDK's create (Resend's step graph) could not, so that the
// SDK's other automation calls meet one.
async function mailroomAutomation() {
  if (s.automation) return s.automation;
  const r = await fetch(`${env.RESEND_BASE_URL}/automations`, { method: "POST",
    headers: { Authorization: `Bearer ${env.MAILROOM_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ yaml: `name: SDK flow ${uniq}\ntrigger: { event: api.call }\nsteps:\n  - wait: 1h\n` }) });
  s.automation = (await r.json()).id;
  // One run (an api.call trigger), for automations.runs.*.
  const t = await fetch(`${env.RESEND_BASE_URL}/automations/${s.automation}/trigger`, { method: "POST",
    headers: { Authorization: `Bearer ${env.MAILROOM_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ email: to, idempotency_key: `run-${uniq}` }) });
  if (!t.ok) throw new Error(`trigger: ${t.status} ${await t.text()}`);
  return s.automation;
}

// eventAutomation makes an automation (Mailroom's YAML) that starts on the
// custom event events.create defined, so that events.send starts a run.
async function eventAutomation() {
  const r = await fetch(`${env.RESEND_BASE_URL}/automations`, { method: "POST",
    headers: { Authorization: `Bearer ${env.MAILROOM_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ yaml: `name: On event ${uniq}\ntrigger: { event: user.created.${uniq} }\nsteps:\n  - wait: 1h\n` }) });
  if (!r.ok) throw new Error(`automation on the event: ${r.status} ${await r.text()}`);
}

// copied runs a duplicate call and reads the copy back (got), so the check
// sees the copy's name and state, not only its id.
async function copied(dup, get) {
  const r = await dup;
  if (r.error) return r;
  const g = await get(r.data.id);
  return { data: { ...r.data, got: g.data }, error: g.error };
}

// [call, fn returning the SDK's promise, check of data (optional)]
const calls = [
  ["emails.send", () => resend.emails.send({ from, to, subject: "every call", text: "x" }), hasId, (d) => (s.email = d.id)],
  ["emails.create", () => resend.emails.create({ from, to, subject: "later", text: "x", scheduledAt: "in 1 hour" }), hasId, (d) => (s.scheduled = d.id)],
  ["emails.get", () => resend.emails.get(s.email), (d) => d.id === s.email && d.object === "email" && d.text === "x" && d.html === null],
  ["emails.list", () => resend.emails.list(), isList],
  ["emails.update", () => resend.emails.update({ id: s.scheduled, scheduledAt: new Date(Date.now() + 7200e3).toISOString() }), hasId],
  ["emails.cancel", () => resend.emails.cancel(s.scheduled), hasId],
  ["emails.share", () => resend.emails.share(s.email)],
  ["emails.metrics", () => resend.emails.metrics({ dimensions: ["period"] }), (d) => d.object === "metrics" && typeof d.totals?.sent === "number" && d.data?.length === 7],
  ["emails.attachments.list", async () => resend.emails.attachments.list({ emailId: (s.attEmail = (await resend.emails.send({ from, to, subject: "with a file", text: "x",
    attachments: [{ filename: "note.txt", content: Buffer.from("note") }] })).data?.id) ?? "none" }),
    (d) => d.data?.length === 1 && d.data[0].filename === "note.txt" && d.data[0].size === 4 && d.data[0].download_url, (d) => (s.att = d.data[0].id)],
  ["emails.attachments.get", () => resend.emails.attachments.get({ emailId: s.attEmail ?? "none", id: s.att ?? "none" }), (d) => d.object === "attachment" && d.filename === "note.txt"],
  ["batch.send", () => resend.batch.send([{ from, to, subject: "b1", text: "x" }, { from, to, subject: "b2", text: "y" }]), (d) => d.data?.length === 2],
  ["batch.create", () => resend.batch.create([{ from, to, subject: "b3", text: "x" }]), (d) => d.data?.length === 1],

  ["emails.receiving.list", () => resend.emails.receiving.list(), (d) => d.data?.length === 1 && d.data[0].subject === "Received", (d) => (s.received = d.data[0].id)],
  ["emails.receiving.get", () => resend.emails.receiving.get(s.received ?? "none"), (d) => d.id === s.received && d.object === "email" && /hello/.test(d.text)],
  ["emails.receiving.attachments.list", () => resend.emails.receiving.attachments.list({ emailId: s.received ?? "none" }), (d) => d.data?.length === 1 && d.data[0].download_url, (d) => (s.receivedAtt = d.data[0].id)],
  ["emails.receiving.attachments.get", () => resend.emails.receiving.attachments.get({ emailId: s.received ?? "none", id: s.receivedAtt ?? "none" }), (d) => d.filename === "note.txt"],
  ["emails.receiving.forward", () => resend.emails.receiving.forward({ emailId: s.received ?? "none", from, to }), hasId], // fetches raw.download_url bare

  ["domains.create", () => resend.domains.create({ name: `sdk-${uniq}.example` }), hasId, (d) => (s.domain = d.id)],
  ["domains.list", () => resend.domains.list(), isList],
  ["domains.get", () => resend.domains.get(s.domain), (d) => d.id === s.domain],
  ["domains.update", () => resend.domains.update({ id: s.domain, openTracking: true, clickTracking: true }), hasId],
  ["domains.verify", () => resend.domains.verify(s.domain), hasId],
  ["domains.claims.create", () => resend.domains.claims.create({ name: `claim-${uniq}.example` })],
  ["domains.claims.get", () => resend.domains.claims.get(s.domain)],
  ["domains.claims.verify", () => resend.domains.claims.verify(s.domain)],

  ["apiKeys.create", () => resend.apiKeys.create({ name: "sdk", permission: "sending_access" }), (d) => hasId(d) && d.token, (d) => (s.key = d.id)],
  ["apiKeys.create{domainId}", () => resend.apiKeys.create({ name: "sdk-domain", permission: "sending_access", domainId: s.domain }), hasId, (d) => (s.key2 = d.id)],
  ["apiKeys.list", () => resend.apiKeys.list(), isList],
  ["apiKeys.update", () => resend.apiKeys.update(s.key, { name: "renamed" })],
  ["apiKeys.remove", () => resend.apiKeys.remove(s.key)],

  ["segments.create", () => resend.segments.create({ name: `seg-${uniq}` }), hasId, (d) => (s.segment = d.id)],
  ["segments.list", () => resend.segments.list(), isList],
  ["segments.get", () => resend.segments.get(s.segment), (d) => d.id === s.segment],
  ["segments.update", () => resend.segments.update(s.segment, { name: `seg2-${uniq}` }), hasId],
  ["audiences.create", () => resend.audiences.create({ name: `aud-${uniq}` }), hasId, (d) => (s.audience = d.id)],
  ["audiences.list", () => resend.audiences.list(), isList],
  ["audiences.get", () => resend.audiences.get(s.audience), (d) => d.id === s.audience],
  ["audiences.update", () => resend.audiences.update(s.audience, { name: `aud2-${uniq}` }), hasId],

  ["topics.create", () => resend.topics.create({ name: `topic-${uniq}`, description: "news", defaultSubscription: "opt_in" }), hasId, (d) => (s.topic = d.id)],
  ["topics.list", () => resend.topics.list(), isList],
  ["topics.get", () => resend.topics.get(s.topic), (d) => d.id === s.topic],
  ["topics.update", () => resend.topics.update({ id: s.topic, name: `topic2-${uniq}` }), hasId],

  ["contactProperties.create", () => resend.contactProperties.create({ key: "plan", type: "string", fallbackValue: "free" }), hasId, (d) => (s.property = d.id)],
  ["contactProperties.list", () => resend.contactProperties.list(), (d) => d.data?.some((p) => p.id === s.property && p.fallbackValue === "free")],
  ["contactProperties.get", () => resend.contactProperties.get(s.property ?? "none"), (d) => d.id === s.property && d.key === "plan" && d.type === "string"],
  ["contactProperties.update", () => resend.contactProperties.update({ id: s.property ?? "none", fallbackValue: "pro" }), hasId],

  ["contacts.create", () => resend.contacts.create({ email: `ann-${uniq}@example.com`, firstName: "Ann" }), hasId, (d) => (s.contact = d.id)],
  ["contacts.create{segments}", () => resend.contacts.create({ email: `bob-${uniq}@example.com`, segments: [{ id: s.segment }] }), hasId, (d) => (s.contact2 = d.id)],
  ["contacts.create{audienceId}", () => resend.contacts.create({ email: `cy-${uniq}@example.com`, audienceId: s.audience }), hasId],
  ["contacts.list", () => resend.contacts.list(), isList],
  ["contacts.list{audienceId}", () => resend.contacts.list({ audienceId: s.audience }), (d) => d.data?.some((c) => c.id === s.contact)], // a segment without rules: everyone
  ["contacts.get", () => resend.contacts.get(s.contact), (d) => d.id === s.contact],
  ["contacts.get{email}", () => resend.contacts.get({ email: `ann-${uniq}@example.com` }), (d) => d.id === s.contact],
  ["contacts.update", () => resend.contacts.update({ id: s.contact, lastName: "Lee" }), hasId],
  ["contacts.update{email,unsubscribed}", () => resend.contacts.update({ email: `ann-${uniq}@example.com`, unsubscribed: true }), hasId],
  ["contacts.segments.add", () => resend.contacts.segments.add({ contactId: s.contact, segmentId: s.segment }), hasId],
  ["contacts.segments.list", () => resend.contacts.segments.list({ contactId: s.contact }), (d) => d.data?.some((g) => g.id === s.segment)],
  ["contacts.segments.remove", () => resend.contacts.segments.remove({ contactId: s.contact, segmentId: s.segment })],
  ["contacts.topics.update", () => resend.contacts.topics.update({ id: s.contact, topics: [{ id: s.topic, subscription: "opt_out" }] }), hasId],
  ["contacts.topics.list", () => resend.contacts.topics.list({ id: s.contact }), (d) => d.data?.some((t) => t.id === s.topic && t.subscription === "opt_out")],
  ["contacts.imports.create", () => resend.contacts.imports.create({ file: new Blob([`email,First,Plan\nimp-${uniq}@example.com,Imp,pro\nnot-an-address,X,free\n`], { type: "text/csv" }),
    columnMap: { email: "email", firstName: "First", properties: { plan: { column: "Plan", type: "string" } } } }),
    (d) => d.object === "contact_import" && hasId(d), (d) => (s.import = d.id)],
  ["contacts.imports.list", () => resend.contacts.imports.list(), (d) => d.data?.some((i) => i.id === s.import)],
  ["contacts.imports.get", () => Promise.all([resend.contacts.imports.get(s.import ?? "none"), resend.contacts.get({ email: `imp-${uniq}@example.com` })])
    .then(([r, c]) => (r.error || c.error ? { error: r.error ?? c.error } : { data: { ...r.data, contact: c.data } })),
    (d) => d.id === s.import && d.status === "completed" && d.counts?.created === 1 && d.counts?.failed === 1 && d.counts?.total === 2 &&
      d.contact?.first_name === "Imp" && d.contact?.attributes?.plan === "pro"],
  ["contacts.remove", () => resend.contacts.create({ email: `dee-${uniq}@example.com` }).then((r) => resend.contacts.remove(r.data?.id ?? "none"))],
  ["contacts.remove{email}", () => resend.contacts.remove({ email: `ann-${uniq}@example.com` })],

  ["templates.create", () => resend.templates.create({ name: `tpl-${uniq}`, subject: "Hi {{{NAME}}}", html: "<p>Hi {{{NAME}}}</p>", variables: [{ key: "NAME", type: "string", fallbackValue: "there" }] }), hasId, (d) => (s.template = d.id)],
  ["templates.create(plain)", () => resend.templates.create({ name: `tpl2-${uniq}`, html: "<p>Hello</p>" }), hasId, (d) => (s.template2 = d.id)],
  ["templates.list", () => resend.templates.list(), isList],
  ["templates.get", () => resend.templates.get(s.template2), (d) => d.id === s.template2],
  ["templates.update", () => resend.templates.update(s.template2, { subject: "New", html: "<p>New</p>" }), hasId],
  ["templates.publish", () => resend.templates.publish(s.template2)],
  ["templates.duplicate", () => copied(resend.templates.duplicate(s.template2), (id) => resend.templates.get(id)),
    (d) => d.object === "template" && hasId(d) && d.id !== s.template2 && d.got?.name === `tpl2-${uniq} (copy)` && d.got?.published_version_id === null],
  ["templates.create().publish", () => resend.templates.create({ name: `tpl3-${uniq}`, html: "<p>x</p>" }).publish()],
  ["templates.remove", () => resend.templates.remove(s.template2)],

  ["broadcasts.create", () => resend.broadcasts.create({ segmentId: s.segment, from, subject: "News", html: "<p>News</p>" }), hasId, (d) => (s.broadcast = d.id)],
  ["broadcasts.create{audienceId}", () => resend.broadcasts.create({ audienceId: s.audience, from, subject: "News", text: "News" }), hasId, (d) => (s.broadcast2 = d.id)],
  ["broadcasts.list", () => resend.broadcasts.list(), isList],
  ["broadcasts.get", () => resend.broadcasts.get(s.broadcast), (d) => d.id === s.broadcast],
  ["broadcasts.update", () => resend.broadcasts.update(s.broadcast, { subject: "News 2" }), hasId],
  ["broadcasts.duplicate", () => copied(resend.broadcasts.duplicate(s.broadcast), (id) => resend.broadcasts.get(id)),
    (d) => d.object === "broadcast" && d.id !== s.broadcast && d.got?.name === "News 2 (copy)" && d.got?.status === "draft" && d.got?.subject === "News 2"],
  ["broadcasts.send", () => copied(resend.broadcasts.send(s.broadcast2, { scheduledAt: "in 1 hour" }), (id) => resend.broadcasts.get(id)),
    (d) => d.id === s.broadcast2 && d.got?.status === "scheduled" && d.got?.segment_id === s.audience], // audienceId: Resend's audiences are segments
  ["broadcasts.create{send}", () => copied(resend.broadcasts.create({ segmentId: s.segment, from, subject: "Now", text: "x", send: true }),
    (id) => resend.broadcasts.recipients(id, { type: "sent" })), (d) => hasId(d) && d.got?.data?.some((r) => r.email === to)], // the subscriber startWithMail made
  ["broadcasts.recipients", () => resend.broadcasts.recipients(s.broadcast2, { type: "sent" }), isList],
  ["broadcasts.clickedLinks", () => resend.broadcasts.clickedLinks(s.broadcast2), isList],
  ["broadcasts.cancel", () => resend.broadcasts.cancel(s.broadcast2)],
  ["broadcasts.remove", () => resend.broadcasts.remove(s.broadcast)],

  ["suppressions.add", () => resend.suppressions.add({ email: `sup-${uniq}@example.com` }), hasId, (d) => (s.suppression = d.id)],
  ["suppressions.list", () => resend.suppressions.list(), isList],
  ["suppressions.get", () => resend.suppressions.get(s.suppression), (d) => d.id === s.suppression],
  ["suppressions.get{email}", () => resend.suppressions.get(`sup-${uniq}@example.com`), (d) => d.id === s.suppression],
  ["suppressions.remove{email}", () => resend.suppressions.remove(`sup-${uniq}@example.com`)],
  ["suppressions.batch.add", () => resend.suppressions.batch.add({ emails: [`sb1-${uniq}@example.com`, `sb2-${uniq}@example.com`] }), (d) => d.data?.length === 2],
  ["suppressions.batch.remove", () => resend.suppressions.batch.remove({ emails: [`sb1-${uniq}@example.com`] })],
  ["suppressions.remove", () => resend.suppressions.add({ email: `sup2-${uniq}@example.com` }).then((r) => resend.suppressions.remove(r.data?.id ?? "none"))],

  ["webhooks.create", () => resend.webhooks.create({ endpoint: "https://hooks.example.com/resend", events: ["email.delivered"] }), (d) => hasId(d) && d.signing_secret, (d) => (s.webhook = d.id)],
  ["webhooks.list", () => resend.webhooks.list(), isList],
  ["webhooks.get", () => resend.webhooks.get(s.webhook), (d) => d.id === s.webhook],
  ["webhooks.update", () => resend.webhooks.update(s.webhook, { events: ["email.delivered", "email.bounced"] }), hasId],
  ["webhooks.update{status}", () => resend.webhooks.update(s.webhook, { status: "disabled" }), hasId],
  ["webhooks.rotateSigningSecret", () => resend.webhooks.rotateSigningSecret(s.webhook), hasId],
  ["webhooks.verify", verifyDelivery], // a real delivery to a receiver here, checked by the SDK's verify
  ["webhooks.events.list", () => resend.webhooks.events.list({ webhookId: s.loggedHook ?? "none" }), (d) => d.data?.length === 1 && d.data[0].status === "success", (d) => (s.hookEvent = d.data[0].id)],
  ["webhooks.events.get", () => resend.webhooks.events.get({ webhookId: s.loggedHook ?? "none", eventId: s.hookEvent ?? "none" }),
    (d) => d.id === s.hookEvent && d.object === "webhook_event" && d.status === "success" && d.next_attempt_at === null && d.payload?.event === "email.delivered"], // the spec's body: event, not type,
  ["webhooks.events.attempts.list", () => resend.webhooks.events.attempts.list({ webhookId: s.loggedHook ?? "none", eventId: s.hookEvent ?? "none" }), (d) => d.data?.length === 1 && d.data[0].http_status_code === 200],
  ["webhooks.events.replay", () => resend.webhooks.events.replay({ webhookId: s.loggedHook ?? "none", eventId: s.hookEvent ?? "none" }), (d) => d.id === s.hookEvent],
  ["webhooks.remove", () => resend.webhooks.remove(s.webhook)],

  ["automations.create", () => copied(resend.automations.create({ name: `auto-${uniq}`, status: "disabled",
    steps: [{ key: "start", type: "trigger", config: { eventName: "contact.created" } }, { key: "pause", type: "delay", config: { duration: "1 hour" } },
      { key: "welcome", type: "send_email", config: { template: { id: s.template }, from, subject: "Welcome" } }],
    connections: [{ from: "start", to: "pause" }, { from: "pause", to: "welcome", type: "default" }] }), (id) => resend.automations.get(id)),
    (d) => d.object === "automation" && hasId(d) && d.got?.enabled === false && /wait: 1h/.test(d.got?.yaml) && /template: tpl_/.test(d.got?.yaml)],
  ["automations.list", () => resend.automations.list(), isList],
  ["automations.get", async () => resend.automations.get(await mailroomAutomation()), (d) => d.id === s.automation],
  ["automations.update", async () => resend.automations.update(await mailroomAutomation(), { status: "disabled" }), hasId],
  ["automations.duplicate", async () => copied(resend.automations.duplicate(await mailroomAutomation()), (id) => resend.automations.get(id)),
    (d) => d.object === "automation" && d.id !== s.automation && d.got?.name === `SDK flow ${uniq} (copy)` && d.got?.enabled === false],
  ["automations.stop", async () => resend.automations.update(await mailroomAutomation(), { status: "enabled" }).then(() => resend.automations.stop(s.automation))
    .then(async (r) => r.error ? r : { data: { ...r.data, got: (await resend.automations.get(s.automation)).data }, error: null }),
    (d) => d.id === s.automation && d.status === "disabled" && d.got?.enabled === false],
  ["automations.runs.list", async () => resend.automations.runs.list({ automationId: await mailroomAutomation() }), (d) => d.data?.length === 1 && hasId(d.data[0]),
    (d) => (s.run = d.data[0].id)],
  ["automations.runs.get", async () => resend.automations.runs.get({ automationId: await mailroomAutomation(), runId: s.run ?? "none" }),
    (d) => d.id === s.run && d.object === "automation_run" && Array.isArray(d.steps)],
  ["automations.remove", async () => resend.automations.remove(await mailroomAutomation())],

  ["events.create", () => resend.events.create({ name: `user.created.${uniq}`, schema: { plan: "string" } }), (d) => hasId(d) && d.object === "event", (d) => (s.event = d.id)],
  ["events.list", () => resend.events.list(), (d) => d.data?.some((e) => e.id === s.event)],
  ["events.get", () => resend.events.get(s.event ?? "none"), (d) => d.id === s.event && d.schema?.plan === "string"],
  ["events.update", () => resend.events.update(s.event ?? "none", { schema: null }), (d) => d.id === s.event && d.schema === null],
  ["events.send", () => eventAutomation().then(() => resend.events.send({ event: `user.created.${uniq}`, email: to, payload: { plan: "pro" } })),
    (d) => d.event === `user.created.${uniq}` && d.run_ids?.length === 1],
  ["events.remove", () => resend.events.remove(s.event ?? "none"), (d) => d.id === s.event && d.deleted === true],

  ["logs.list", () => resend.logs.list({ limit: 5 }), (d) => isList(d) && d.data.length > 0 && typeof d.data[0].response_status === "number", (d) => (s.log = d.data?.[0]?.id)],
  ["logs.get", () => resend.logs.get(s.log ?? "none"), (d) => hasId(d) && d.object === "log" && typeof d.endpoint === "string"],

  ["inboxes.list", () => resend.inboxes.list(), (d) => d.data?.length === 1,
    (d) => (s.mainInbox = d.data[0].email_address)], // the workspace's first mailbox, which received mail
  ["inboxes.create", () => resend.inboxes.create({ emailAddress: `box-${uniq}@${s.mainInbox?.split("@")[1]}`, name: "Box" }),
    (d) => hasId(d) && d.object === "inbox", (d) => (s.inbox = d.id)],
  ["inboxes.get", () => resend.inboxes.get(s.inbox ?? "none"), (d) => d.id === s.inbox && d.object === "inbox" && d.name === "Box"],
  ["inboxes.update", () => resend.inboxes.update(s.inbox ?? "none", { name: "Box 2" }), (d) => d.id === s.inbox],
  ["inboxes.threads.list", () => resend.inboxes.threads.list({ emailAddress: s.mainInbox ?? "none" }), (d) => d.data?.length === 1 && d.data[0].subject === "Received",
    (d) => (s.thread = d.data[0].id)],
  ["inboxes.threads.search", () => resend.inboxes.threads.search({ emailAddress: s.mainInbox ?? "none", query: "hello" }), (d) => d.data?.[0]?.id === s.thread],
  ["inboxes.threads.get", () => resend.inboxes.threads.get({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none" }),
    (d) => d.id === s.thread && d.object === "inbox_thread"],
  ["inboxes.threads.update", () => resend.inboxes.threads.update({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none", read: false }),
    (d) => d.id === s.thread && d.read === false],
  ["inboxes.threads.emails.list", () => resend.inboxes.threads.emails.list({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none" }),
    (d) => d.data?.length === 1 && d.data[0].direction === "inbound", (d) => (s.threadEmail = d.data[0].id)],
  ["inboxes.threads.emails.get", () => resend.inboxes.threads.emails.get({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none", emailId: s.threadEmail ?? "none" }),
    (d) => d.id === s.threadEmail && /hello/.test(d.text) && d.attachments?.[0]?.filename === "note.txt"],
  ["inboxes.threads.emails.reply", () => resend.inboxes.threads.emails.reply({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none", emailId: s.threadEmail ?? "none", text: "Thanks" }), hasId],
  ["inboxes.threads.emails.forward", () => resend.inboxes.threads.emails.forward({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none", emailId: s.threadEmail ?? "none", to, text: "FYI" }), hasId],
  ["inboxes.threads.remove", () => resend.inboxes.threads.remove({ emailAddress: s.mainInbox ?? "none", threadId: s.thread ?? "none" }), (d) => d.id === s.thread && d.deleted === true],
  ["inboxes.threads.labels.add", () => resend.inboxes.threads.labels.add({ inboxId: s.inbox ?? "none", threadId: "none", labelIds: [] })],
  ["inboxes.threads.labels.set", () => resend.inboxes.threads.labels.set({ inboxId: s.inbox ?? "none", threadId: "none", labelIds: [] })],
  ["inboxes.threads.labels.remove", () => resend.inboxes.threads.labels.remove({ inboxId: s.inbox ?? "none", threadId: "none", labelId: "none" })],
  ["inboxes.labels.list", () => resend.inboxes.labels.list({ inboxId: s.inbox ?? "none" })],
  ["inboxes.labels.create", () => resend.inboxes.labels.create({ inboxId: s.inbox ?? "none", name: "l" })],
  ["inboxes.labels.update", () => resend.inboxes.labels.update({ inboxId: s.inbox ?? "none", labelId: "none", name: "m" })],
  ["inboxes.labels.remove", () => resend.inboxes.labels.remove({ inboxId: s.inbox ?? "none", labelId: "none" })],
  ["inboxes.drafts.list", () => resend.inboxes.drafts.list({ inboxId: s.inbox ?? "none" })],
  ["inboxes.drafts.create", () => resend.inboxes.drafts.create({ inboxId: s.inbox ?? "none", to, subject: "d", text: "x" })],
  ["inboxes.drafts.get", () => resend.inboxes.drafts.get({ inboxId: s.inbox ?? "none", draftId: "none" })],
  ["inboxes.drafts.update", () => resend.inboxes.drafts.update({ inboxId: s.inbox ?? "none", draftId: "none", subject: "e" })],
  ["inboxes.drafts.remove", () => resend.inboxes.drafts.remove({ inboxId: s.inbox ?? "none", draftId: "none" })],
  ["inboxes.drafts.send", () => resend.inboxes.drafts.send({ inboxId: s.inbox ?? "none", draftId: "none" })],
  ["inboxes.agent.get", () => resend.inboxes.agent.get({ inboxId: s.inbox ?? "none" })],
  ["inboxes.agent.update", () => resend.inboxes.agent.update({ inboxId: s.inbox ?? "none", enabled: false })],
  ["inboxes.remove", () => resend.inboxes.remove(s.inbox ?? "none"), (d) => d.id === s.inbox && d.deleted === true],

  ["oauthGrants.list", () => resend.oauthGrants.list(), isList],
  ["oauthGrants.revoke", () => resend.oauthGrants.revoke("none")],
  ["usage.get", () => resend.usage.get()],

  ["segments.remove", () => resend.segments.remove(s.segment)],
  ["audiences.remove", () => resend.audiences.remove(s.audience)],
  ["topics.remove", () => resend.topics.remove(s.topic)],
  ["contactProperties.remove", () => resend.contactProperties.remove(s.property ?? "none"), (d) => d.deleted === true && d.id === s.property],
  ["apiKeys.remove{domainId}", () => resend.apiKeys.remove(s.key2 ?? "none")],
  ["domains.remove", () => resend.domains.remove(s.domain)],
];

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const known = new Set();
for (const [call, fn, check, keep] of calls) {
  known.add(call.replace(/[{(].*$/, "").replace(/\.create\.publish$/, ""));
  let r;
  const started = Date.now();
  try {
    r = await fn();
  } catch (e) {
    out({ call, ok: false, error: `threw: ${e?.message ?? e}` });
    continue;
  }
  if (r?.error) {
    out({ call, ok: false, error: r.error });
    continue;
  }
  if (check && !check(r?.data ?? {})) {
    out({ call, ok: false, error: { message: "answer lacks the shape the SDK declares", data: r?.data } });
    continue;
  }
  if (keep) keep(r.data);
  out({ call, ok: true, ms: Date.now() - started });
}

// Every public method the SDK offers, walked from the client object; a
// method counts when the SDK's type declarations name it without "private".
const dts = readFileSync(new URL("node_modules/resend/dist/index.d.mts", import.meta.url), "utf8");
const declared = new Set([...dts.matchAll(/^ {2}(\w+)(?:<[^(]*>)?\(/gm)].map((m) => m[1]));
const hidden = new Set([...dts.matchAll(/^ {2}private (?:readonly )?(\w+)/gm)].map((m) => m[1]));
function methods(obj, prefix, seen = new Set()) {
  const names = [];
  if (!obj || typeof obj !== "object" || seen.has(obj)) return names;
  seen.add(obj);
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const m of Object.getOwnPropertyNames(p)) {
      if (m !== "constructor" && typeof p[m] === "function" && declared.has(m) && !hidden.has(m)) names.push(prefix + m);
    }
  }
  for (const [k, v] of Object.entries(obj)) {
    if (!hidden.has(k) && v && typeof v === "object" && v.constructor !== Object) names.push(...methods(v, prefix + k + ".", seen));
  }
  return names;
}
const client = new Set(["fetchRequest", "post", "get", "put", "patch", "delete"]);
for (const m of new Set(methods(resend, ""))) {
  if (!client.has(m) && !known.has(m)) out({ call: m, missing: true });
}
