// resolve(): the real @openai/agents Runner with a scripted model (no network); each pending
// tool approval decided by a real aye serve.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Agent, RunState, Runner, setTracingDisabled, tool } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall, modelResponder } from '@openai/agents/testing';
import { z } from 'zod';
import { connect, resolve, resolveOpenAIAgents } from 'aye-client';
import { deadUrl, startAye } from './aye.mjs';

setTracingDisabled(true);
let aye;
let client;

before(async () => {
  aye = await startAye();
  client = connect({ url: aye.url, token: aye.agent });
});

after(async () => {
  await aye?.stop();
});

/** An agent whose scripted model calls `toolName` with `input` once, then answers 'done'; its
 * tools need approval (deploy) or not (lookup). */
function agentCalling(toolName, input) {
  const ran = [];
  const told = [];
  const model = new ScriptedModel([
    [functionCall(toolName, input, { callId: 'call-1' })],
    modelResponder((call) => {
      told.push(call.request.input.find((item) => item.type === 'function_call_result')?.output);
      return [assistantMessage('done')];
    }),
  ]);
  const run = async (args) => { ran.push(args); return `ran ${JSON.stringify(args)}`; };
  const agent = new Agent({
    name: 'deployer', instructions: 'Deploy when asked.', model,
    tools: [
      tool({ name: 'deploy', description: 'Deploy a version', needsApproval: true,
             parameters: z.object({ version: z.string() }), execute: run }),
      tool({ name: 'lookup', description: 'Look a city up', needsApproval: true,
             parameters: z.object({ city: z.string() }), execute: run }),
    ],
  });
  return { agent, ran, told };
}

test('a tool no gate names is approved and runs', async () => {
  const { agent, ran } = agentCalling('lookup', { city: 'Oslo' });
  const runner = new Runner();
  const first = await runner.run(agent, 'go');
  assert.equal(first.interruptions.length, 1);
  const [state, pending] = await resolve(first, client);
  assert.deepEqual(pending, []);
  assert.equal((await runner.run(agent, state)).finalOutput, 'done');
  assert.deepEqual(ran, [{ city: 'Oslo' }]);
});

test('a tool call approved while it waits runs', async () => {
  const input = { version: 'oa-approved' };
  const { agent, ran } = agentCalling('deploy', input);
  const runner = new Runner();
  const first = await runner.run(agent, 'go');
  const [[state, pending]] = await Promise.all([
    resolveOpenAIAgents(first.state, client), aye.operator.approve('openai.deploy', input)]);
  assert.deepEqual(pending, []);
  await runner.run(agent, state);
  assert.deepEqual(ran, [input]);
});

test('a refused tool call reaches the model as a rejection naming who refused and why', async () => {
  const input = { version: 'oa-refused' };
  const { agent, ran, told } = agentCalling('deploy', input);
  const runner = new Runner();
  const first = await runner.run(agent, 'go');
  const [[state]] = await Promise.all([
    resolve(first, client), aye.operator.refuse('openai.deploy', input, 'not on a Friday')]);
  assert.equal((await runner.run(agent, state)).finalOutput, 'done');
  assert.deepEqual(ran, []);
  assert.match(told[0].text, /^aye: openai\.deploy was refused by operator:local: not on a Friday/);
});

test('still pending at waitS: left undecided with its ref; resolved again from the saved state, the same ask is found and the run goes on', async () => {
  const input = { version: 'oa-pending' };
  const { agent, ran } = agentCalling('deploy', input);
  const first = await new Runner().run(agent, 'go');
  const [state, pending] = await resolve(first, client, { waitS: 1 });
  const [ask] = await aye.operator.asksFor('openai.deploy', input);
  assert.deepEqual(pending, [ask.ref]);
  const saved = state.toString();

  const again = await RunState.fromString(agent, saved);
  assert.deepEqual((await resolve(again, client, { waitS: 0 }))[1], [ask.ref]);
  await aye.operator.answer(ask.ref, 'approve');
  const later = await RunState.fromString(agent, saved); // as another process would
  const [decided, none] = await resolve(later, client, { waitS: 0 });
  assert.deepEqual(none, []);
  assert.equal((await new Runner().run(agent, decided)).finalOutput, 'done');
  assert.deepEqual(ran, [input]);
  assert.equal((await aye.operator.asksFor('openai.deploy', input)).length, 1, 'one ask, never two');
});

test('aye unreachable or a wrong token rejects the call with the reason, never runs it', async () => {
  for (const [url, token, said] of [
    [await deadUrl(), aye.agent, /^aye: openai\.deploy was not allowed: unreachable: /],
    [aye.url, 'a-wrong-token', /^aye: openai\.deploy was not allowed: unauthorized: /]]) {
    const { agent, ran, told } = agentCalling('deploy', { version: 'oa-error' });
    const runner = new Runner();
    const first = await runner.run(agent, 'go');
    const [state, pending] = await resolve(first, connect({ url, token }), { waitS: 0.5 });
    assert.deepEqual(pending, []);
    await runner.run(agent, state);
    assert.deepEqual(ran, []);
    assert.match(told[0].text, said);
  }
});
