// `npm test`: build, type-check, pack, install the tarball into a scratch consumer, type-check a
// consumer file that uses every export, and run the tests there (node --test) against a real
// `aye serve`: what a user installs is what is tested, never the source folder.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const scratch = join(here, '.pack');
const consumer = join(scratch, 'consumer');
const tsc = join(here, 'node_modules', '.bin', 'tsc');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(what, command, args, cwd = here) {
  const started = Date.now();
  try {
    execFileSync(command, args, { cwd, stdio: 'inherit', env: process.env });
  } catch {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`ok: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

rmSync(join(here, 'dist'), { recursive: true, force: true });
rmSync(scratch, { recursive: true, force: true });
mkdirSync(join(consumer, 'test'), { recursive: true });

run('build', tsc, ['-p', 'tsconfig.json']);
run('tsc --noEmit on the package', tsc, ['-p', 'tsconfig.json', '--noEmit']);
run('npm pack', npm, ['pack', '--silent', '--pack-destination', scratch]);
const tarball = readdirSync(scratch).find((name) => name.endsWith('.tgz'));
writeFileSync(join(consumer, 'package.json'),
              JSON.stringify({ name: 'aye-consumer', private: true, type: 'module' }, null, 2));
// The tarball has no dependencies: nothing is fetched. `ai`, `@openai/agents` and zod resolve
// from this package's node_modules, one folder up, as a user's own would.
run('install the tarball', npm, ['install', '--offline', '--no-audit', '--no-fund',
                                 '--no-package-lock', join(scratch, tarball)], consumer);
cpSync(join(here, 'consumer', 'consumer.ts'), join(consumer, 'consumer.ts'));
cpSync(join(here, 'consumer', 'tsconfig.json'), join(consumer, 'tsconfig.json'));
run('tsc --noEmit on a consumer using every export', tsc, ['-p', 'tsconfig.json'], consumer);
for (const name of readdirSync(join(here, 'test'))) {
  cpSync(join(here, 'test', name), join(consumer, 'test', name));
}

const repo = resolve(here, '..', '..');
const venvAye = join(repo, '.venv', 'bin', 'aye');
process.env.AYE_BIN ||= existsSync(venvAye) ? venvAye : 'aye';
process.env.AYE_REPO_README ||= join(repo, 'README.md');
process.env.OPENAI_API_KEY ||= 'not-used-the-model-is-scripted';
process.env.OPENAI_AGENTS_DISABLE_TRACING = '1';
const tests = readdirSync(join(consumer, 'test')).filter((name) => name.endsWith('.test.mjs'))
  .map((name) => join('test', name));
run('node --test against a real aye serve', process.execPath, ['--test', '--test-reporter=spec', '--test-timeout=120000', ...tests], consumer);
