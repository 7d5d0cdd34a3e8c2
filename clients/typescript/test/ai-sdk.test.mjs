// toolApproval(): the real `ai` generateText with a scripted model (no network), each tool call
// asked of a real aye serve.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { aiSdkToolApproval, connect, toolApproval } from 'aye-client';
import { deadUrl, startAye } from './aye.mjs';

let aye;
let client;

before(async () => {
  aye = await startAye();
  client = connect({ url: aye.url, token: aye.agent });
});

after(async () => {
  await aye?.stop();
});

const USAGE = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
                outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A model that calls `toolName` with `input` once, then says what the tool's result was
 * (through generateText's doGenerate or streamText's doStream alike). */
function scripted(toolName, input) {
  const prompts = [];
  const next = (prompt) => {
    prompts.push(prompt);
    return prompts.length === 1
      ? { content: [{ type: 'tool-call', toolCallId: 'call-1', toolName, input: JSON.stringify(input) }],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' } }
      : { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' } };
  };
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => ({ ...next(prompt), usage: USAGE, warnings: [] }),
    doStream: async ({ prompt }) => {
      const { content: [part], finishReason } = next(prompt);
      const parts = part.type === 'text'
        ? [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: part.text },
           { type: 'text-end', id: 't' }]
        : [part];
      return { stream: new ReadableStream({ start(controller) {
        for (const chunk of [{ type: 'stream-start', warnings: [] }, ...parts,
                             { type: 'finish', finishReason, usage: USAGE }]) controller.enqueue(chunk);
        controller.close();
      } }) };
    },
  });
  /** What the model was told the tool call came to. */
  const told = () => prompts.at(-1)?.find((m) => m.role === 'tool')?.content[0]?.output;
  return { model, told };
}

/** One agent turn: the model calls a tool; toolApproval asks aye; the tool runs or not. */
async function turn(toolName, input, approval) {
  const { model, told } = scripted(toolName, input);
  const ran = [];
  const run = async (args) => { ran.push(args); return `ran ${JSON.stringify(args)}`; };
  await generateText({
    model, prompt: 'do it', stopWhen: stepCountIs(3), toolApproval: approval,
    tools: {
      deploy: tool({ inputSchema: z.object({ version: z.string() }), execute: run }),
      lookup: tool({ inputSchema: z.object({ city: z.string() }), execute: run }),
    },
  });
  return { ran, told: told() };
}

test('a tool no gate names runs', async () => {
  const { ran, told } = await turn('lookup', { city: 'Oslo' }, toolApproval(client));
  assert.deepEqual(ran, [{ city: 'Oslo' }]);
  assert.equal(told.type, 'text');
});

test('a tool call approved while it waits runs', async () => {
  const input = { version: 'ai-approved' };
  const [{ ran }] = await Promise.all([
    turn('deploy', input, toolApproval(client)), aye.operator.approve('ai.deploy', input)]);
  assert.deepEqual(ran, [input]);
});

test('a refused tool call reaches the model as a denial naming who refused and why', async () => {
  const input = { version: 'ai-refused' };
  const [{ ran, told }] = await Promise.all([
    turn('deploy', input, aiSdkToolApproval(client)),
    aye.operator.refuse('ai.deploy', input, 'not on a Friday')]);
  assert.deepEqual(ran, []);
  assert.equal(told.type, 'execution-denied');
  assert.match(told.reason, /^aye: ai\.deploy was refused by operator:local: not on a Friday/);
});

test('still pending at waitS: denied with the ref; the same call reuses the ask and runs once approved', async () => {
  const input = { version: 'ai-pending' };
  const first = await turn('deploy', input, toolApproval(client, { waitS: 1 }));
  assert.deepEqual(first.ran, []);
  const [ask] = await aye.operator.asksFor('ai.deploy', input);
  assert.equal(first.told.type, 'execution-denied');
  assert.equal(first.told.reason,
               `aye: waiting for approval ${ask.ref} (ai.deploy); make the same call again to go on`);
  const second = await turn('deploy', input, toolApproval(client, { waitS: 0 }));
  assert.deepEqual(second.ran, []);
  assert.match(second.told.reason, new RegExp(`waiting for approval ${ask.ref} `));
  await aye.operator.answer(ask.ref, 'approve');
  const third = await turn('deploy', input, toolApproval(client, { waitS: 0 }));
  assert.deepEqual(third.ran, [input]);
  assert.equal((await aye.operator.asksFor('ai.deploy', input)).length, 1, 'one ask, never two');
});

test('aye unreachable or a wrong token is a denial with the reason, never a run', async () => {
  const gone = connect({ url: await deadUrl(), token: aye.agent });
  const unreachable = await turn('deploy', { version: 'ai-gone' }, toolApproval(gone, { waitS: 0.5 }));
  assert.deepEqual(unreachable.ran, []);
  assert.match(unreachable.told.reason, /^aye: ai\.deploy was not allowed: unreachable: .*ECONNREFUSED/);
  const wrong = connect({ url: aye.url, token: 'a-wrong-token' });
  const refused = await turn('lookup', { city: 'Oslo' }, toolApproval(wrong));
  assert.deepEqual(refused.ran, []);
  assert.match(refused.told.reason, /^aye: ai\.lookup was not allowed: unauthorized: /);
  assert.ok(!refused.told.reason.includes('a-wrong-token'));
});

test('streamText takes the same toolApproval, and operation() names the gate', async () => {
  const input = { version: 'ai-stream' };
  const { model } = scripted('ship', input);
  const ran = [];
  const [result] = await Promise.all([
    (async () => {
      const stream = streamText({
        model, prompt: 'go', stopWhen: stepCountIs(3),
        toolApproval: toolApproval(client, { operation: (name) => `deploy.${name}` }),
        tools: { ship: tool({ inputSchema: z.object({ version: z.string() }),
                              execute: async (args) => { ran.push(args); return 'shipped'; } }) },
      });
      return stream.text;
    })(),
    aye.operator.approve('deploy.ship', input)]);
  assert.equal(result, 'done');
  assert.deepEqual(ran, [input]);
});

test('the README\'s quick start works as printed: the tool runs once a person approved it', async () => {
  const block = quickStart(await readFile(new URL('../node_modules/aye-client/README.md', import.meta.url), 'utf8'));
  const lines = block.split('\n');
  const imports = lines.filter((line) => line.startsWith('import '));
  const rest = lines.filter((line) => !line.startsWith('import '));
  const ran = [];
  globalThis.quickStartRan = ran;
  // The two things the quick start leaves to the user: a model, and the tool.
  const prelude = [
    "import { tool } from 'ai';",
    "import { MockLanguageModelV4 } from 'ai/test';",
    "import { z } from 'zod';",
    `const script = ${JSON.stringify(['tool-call', 'text'])};`,
    `const usage = ${JSON.stringify(USAGE)};`,
    'const model = new MockLanguageModelV4({ doGenerate: async () => script.shift() === "tool-call"',
    '  ? { content: [{ type: "tool-call", toolCallId: "q1", toolName: "deploy", input: \'{"version":"1.4.2"}\' }], finishReason: { unified: "tool-calls", raw: "" }, usage, warnings: [] }',
    '  : { content: [{ type: "text", text: "deployed" }], finishReason: { unified: "stop", raw: "" }, usage, warnings: [] } });',
    'const deploy = tool({ inputSchema: z.object({ version: z.string() }),',
    '  execute: async ({ version }) => { globalThis.quickStartRan.push(version); return "ok"; } });',
  ];
  const file = new URL('./quick-start.generated.mjs', import.meta.url);
  await writeFile(file, [...imports, ...prelude, ...rest, 'export { text };'].join('\n'));
  process.env.AYE_URL = aye.url;
  process.env.AYE_AGENT_TOKEN = aye.agent;
  const [{ text }] = await Promise.all([
    import(file.href), aye.operator.approve('ai.deploy', { version: '1.4.2' })]);
  assert.equal(text, 'deployed');
  assert.deepEqual(ran, ['1.4.2']);
  // The repository's README shows the same lines, once it has a TypeScript quick start.
  const repoReadme = process.env.AYE_REPO_README
    ? await readFile(process.env.AYE_REPO_README, 'utf8').catch(() => '') : '';
  const section = repoReadme.split(/^#+ TypeScript quick start/m)[1];
  if (section !== undefined) assert.equal(quickStart(section), block);
});

/** The first ```ts block after "Quick start" (or of the text given). */
function quickStart(markdown) {
  const from = markdown.split(/^## Quick start/m)[1] ?? markdown;
  return /```(?:ts|typescript)\n([\s\S]*?)```/.exec(from)[1].trim();
}
