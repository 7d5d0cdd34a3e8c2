// connect(): ask, wait, withdraw, call, gated, receipts and callbacks against a real aye serve.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import {
  ApprovalRefused, AskClosed, AyeError, AyeUnreachable, BadReceipt, BadSignature, StillPending,
  connect, verifyCallback, verifyReceipt,
} from 'aye-client';
import { deadUrl, startAye, until } from './aye.mjs';

let aye;
let client;
let prefix;
const hooks = [];
const receiver = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    hooks.push({ body: Buffer.concat(chunks), headers: request.headers });
    response.writeHead(204).end();
  });
});

before(async () => {
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  prefix = `http://127.0.0.1:${receiver.address().port}/hooks/`;
  aye = await startAye({ callbackPrefix: prefix });
  client = connect({ url: aye.url, token: aye.agent });
});

after(async () => {
  await aye?.stop();
  receiver.close();
});

test('a call no gate names is allowed at once, with nothing to report', async () => {
  assert.deepEqual(await client.call('lookup.weather', { city: 'Oslo' }), { decision: 'allow' });
  let ran = false;
  assert.equal(await client.gated('lookup.weather', { city: 'Oslo' }, () => { ran = true; return 7; }), 7);
  assert.equal(ran, true);
});

test('a call approved while it waits is allowed, with a receipt that verifies offline', async () => {
  const input = { version: '1.4.2', case: 'approved' };
  const [allowed] = await Promise.all([
    client.call('deploy.prod', input), aye.operator.approve('deploy.prod', input)]);
  assert.equal(allowed.decision, 'allow');
  assert.match(allowed.approval, /^[0-9a-f]{32}$/);
  const payload = await verifyReceipt(allowed.receipt, await client.keys());
  assert.equal(payload.decision, 'approved');
  assert.equal(payload.sub, allowed.approval);
  assert.equal(payload.operation, 'deploy.prod');
  assert.equal(payload.approvers[0].by, 'operator:local');
});

test('a refusal throws ApprovalRefused with who and why, and is remembered', async () => {
  const input = { version: '1.4.2', case: 'refused' };
  const [refused] = await Promise.allSettled([
    client.call('deploy.prod', input),
    aye.operator.refuse('deploy.prod', input, 'not on a Friday')]);
  const error = refused.reason;
  assert.ok(error instanceof ApprovalRefused, String(error));
  assert.equal(error.by, 'operator:local');
  assert.equal(error.note, 'not on a Friday');
  assert.equal((await verifyReceipt(error.receipt, await client.keys())).decision, 'approval_refused');
  const again = await client.call('deploy.prod', input).catch((e) => e);
  assert.ok(again instanceof ApprovalRefused);
  assert.equal(again.repeat, true);
  assert.equal(again.note, 'not on a Friday');
  assert.match(again.until, /^\d{4}-\d\d-\d\dT/);
  assert.equal((await aye.operator.asksFor('deploy.prod', input)).length, 1, 'nobody asked twice');
});

test('still pending at waitS: StillPending with the ref; the same call finds the same ask', async () => {
  const input = { version: '1.4.2', case: 'pending' };
  const first = await client.call('deploy.prod', input, { waitS: 1 }).catch((e) => e);
  assert.ok(first instanceof StillPending, String(first));
  assert.match(first.message, new RegExp(`waiting for approval ${first.ref} \\(deploy\\.prod\\).*` +
                                         'make the same call again to go on'));
  const second = await client.call('deploy.prod', input, { waitS: 0 }).catch((e) => e);
  assert.ok(second instanceof StillPending);
  assert.equal(second.ref, first.ref);
  await aye.operator.answer(first.ref, 'approve');
  const allowed = await client.call('deploy.prod', input, { waitS: 0 });
  assert.equal(allowed.decision, 'allow');
  assert.equal((await aye.operator.asksFor('deploy.prod', input)).length, 1);
});

test('gated() runs fn once approved and reports ran; a throw is reported failed with its name', async () => {
  const input = { version: '2.0.0', case: 'gated' };
  const [result] = await Promise.all([
    client.gated('deploy.prod', input, (grant) => `ran with ${grant.approval}`),
    aye.operator.approve('deploy.prod', input)]);
  const [ran] = await aye.operator.asksFor('deploy.prod', input);
  assert.equal(result, `ran with ${ran.id}`);
  assert.equal((await aye.operator.get(ran.ref)).run.outcome, 'ran');

  class DiskFull extends Error {}
  for (const [error, name] of [[new RangeError('disk full'), 'RangeError'], [new DiskFull('x'), 'DiskFull']]) {
    const failing = { version: '2.0.0', case: `gated-fails-${name}` };
    const [thrown] = await Promise.allSettled([
      client.gated('deploy.prod', failing, () => { throw error; }),
      aye.operator.approve('deploy.prod', failing)]);
    assert.equal(thrown.reason, error, 'the block\'s own error, as thrown');
    const [failed] = await aye.operator.asksFor('deploy.prod', failing);
    assert.deepEqual({ ...(await aye.operator.get(failed.ref)).run, at: undefined },
                     { outcome: 'failed', detail: name, at: undefined });
  }
});

test('gated() never runs fn when the call is refused', async () => {
  const input = { version: '2.0.0', case: 'gated-refused' };
  let ran = false;
  const [refused] = await Promise.allSettled([
    client.gated('deploy.prod', input, () => { ran = true; }),
    aye.operator.refuse('deploy.prod', input, 'no')]);
  assert.ok(refused.reason instanceof ApprovalRefused);
  assert.equal(ran, false);
});

test('a wrong token and an unreachable aye are errors, never an allow', async () => {
  const wrong = connect({ url: aye.url, token: 'not-a-token' });
  const denied = await wrong.call('deploy.prod', { case: 'wrong token' }).catch((e) => e);
  assert.ok(denied instanceof AyeError);
  assert.equal(denied.status, 401);
  const gone = connect({ url: await deadUrl(), token: aye.agent });
  const unreachable = await gone.call('deploy.prod', {}, { waitS: 0.5 }).catch((e) => e);
  assert.ok(unreachable instanceof AyeUnreachable, String(unreachable));
  assert.ok(!unreachable.message.includes(aye.agent), 'no token in a message');
});

test('ask(), wait() and withdraw() as the agent sees its asks', async () => {
  const open = await client.ask({ question: 'Which colour?', options: ['red', 'blue'] }, { waitS: 0 });
  assert.equal(open.status, 'open');
  const [answered] = await Promise.all([
    client.wait(open.ref), aye.operator.answer(open.ref, 'blue')]);
  assert.equal(answered.status, 'answered');
  assert.equal(answered.answer.value, 'blue');
  const other = await client.ask({ question: 'Go on?', format: 'confirm' }, { waitS: 0 });
  assert.equal((await client.withdraw(other.ref)).status, 'withdrawn');
  assert.ok((await client.withdraw(other.ref).catch((e) => e)) instanceof AskClosed);
});

test('verifyReceipt refuses every alg but EdDSA, any kid not in the JWKS, and any changed byte', async () => {
  const input = { version: '3.0.0', case: 'receipt' };
  const [allowed] = await Promise.all([
    client.call('deploy.prod', input), aye.operator.approve('deploy.prod', input)]);
  const jwks = await client.keys();
  const [head, body, signature] = allowed.receipt.split('.');
  const header = JSON.parse(Buffer.from(head, 'base64url'));
  const reheaded = (changes) => [
    Buffer.from(JSON.stringify({ ...header, ...changes })).toString('base64url'), body, signature].join('.');
  for (const alg of ['none', 'HS256', 'ES256', 'RS256']) {
    await assert.rejects(verifyReceipt(reheaded({ alg }), jwks), BadReceipt, alg);
  }
  await assert.rejects(verifyReceipt(reheaded({ kid: 'someone-else' }), jwks), BadReceipt);
  await assert.rejects(verifyReceipt(allowed.receipt, { keys: [] }), BadReceipt);
  const payload = JSON.parse(Buffer.from(body, 'base64url'));
  const forged = Buffer.from(JSON.stringify({ ...payload, operation: 'deploy.evil' })).toString('base64url');
  await assert.rejects(verifyReceipt([head, forged, signature].join('.'), jwks), BadReceipt);
  await assert.rejects(verifyReceipt('not.a-receipt', jwks), BadReceipt);
  assert.equal((await verifyReceipt(allowed.receipt, jwks.keys)).sub, allowed.approval);
});

test('verifyCallback takes aye\'s signed callback and refuses another secret or a changed body', async () => {
  const made = await client.ask({ question: 'Ping me back?',
                                  callback_url: `${prefix}done` }, { waitS: 0 });
  await aye.operator.answer(made.ref, 'yes');
  const hook = await until(() => hooks.find((h) => h.body.includes(made.id)));
  const payload = await verifyCallback(hook.body, hook.headers, aye.callbackSecret);
  assert.equal(payload.event, 'ask.closed');
  assert.equal(payload.ask.id, made.id);
  assert.equal(payload.ask.answer.value, 'yes');
  assert.ok(hook.headers['x-aye-delivery']);
  await assert.rejects(verifyCallback(hook.body, hook.headers, 'another secret'), BadSignature);
  const changed = Buffer.from(hook.body.toString().replace('yes', 'no!'));
  await assert.rejects(verifyCallback(changed, hook.headers, aye.callbackSecret), BadSignature);
  await assert.rejects(verifyCallback(hook.body, {}, aye.callbackSecret), BadSignature);
  const asFetch = new Headers({ 'X-Aye-Signature-256': hook.headers['x-aye-signature-256'] });
  assert.equal((await verifyCallback(new Uint8Array(hook.body), asFetch, aye.callbackSecret)).ask.id, made.id);
});
