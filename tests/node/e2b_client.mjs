// E2B's own SDK, @e2b/code-interpreter, in its debug mode (which talks to
// a code interpreter on localhost:49999 instead of E2B's cloud), against
// `cellexec serve --no-token --listen 127.0.0.1:49999`.
// Prints one line per check and exits 1 if any failed.
import { Sandbox } from '@e2b/code-interpreter';

let failed = 0;
function check(name, ok, detail = '') {
  console.log(`${ok ? 'ok' : 'FAILED'}: ${name}${ok || !detail ? '' : ` (${detail})`}`);
  if (!ok) failed++;
}

async function main() {
  const sandbox = await Sandbox.create({ debug: true });

  let execution = await sandbox.runCode("print('hello')\nx = 41\nx + 1");
  check('stdout', execution.logs.stdout.join('') === 'hello\n', JSON.stringify(execution.logs));
  check('main result', execution.text === '42', String(execution.text));
  execution = await sandbox.runCode('x += 1; x');
  check('state kept across calls', execution.text === '42', String(execution.text));

  const out = [];
  const err = [];
  execution = await sandbox.runCode("import sys\nprint('to out')\nprint('to err', file=sys.stderr)", {
    onStdout: (m) => out.push(m.line), onStderr: (m) => err.push(m.line),
  });
  check('onStdout and onStderr', out.join('') === 'to out\n' && err.join('') === 'to err\n',
        JSON.stringify({ out, err }));

  execution = await sandbox.runCode("raise ValueError('bad value')");
  check('error with its name', execution.error?.name === 'ValueError' &&
        execution.error?.value === 'bad value', JSON.stringify(execution.error));

  execution = await sandbox.runCode("from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))");
  check('HTML display', execution.results.some((r) => r.html === '<b>bold</b>' && !r.isMainResult),
        JSON.stringify(execution.results));

  execution = await sandbox.runCode("import os\nprint(os.environ.get('CELLEXEC_E2B'))",
                                    { envs: { CELLEXEC_E2B: 'from envs' } });
  check('envs', execution.logs.stdout.join('') === 'from envs\n', JSON.stringify(execution.logs));
  execution = await sandbox.runCode("import os\nprint(os.environ.get('CELLEXEC_E2B'))");
  check('envs last one call', execution.logs.stdout.join('') === 'None\n', JSON.stringify(execution.logs));

  // Contexts: isolated from each other and from the default one.
  const first = await sandbox.createCodeContext();
  const second = await sandbox.createCodeContext();
  await sandbox.runCode('secret = 1', { context: first });
  execution = await sandbox.runCode("print('secret' in globals())", { context: second });
  check('contexts isolated', execution.logs.stdout.join('') === 'False\n', JSON.stringify(execution.logs));
  execution = await sandbox.runCode('secret', { context: first });
  check('a context keeps its state', execution.text === '1', String(execution.text));
  const listed = await sandbox.listCodeContexts();
  check('contexts listed', listed.some((c) => c.id === first.id) && listed.some((c) => c.id === second.id));
  await sandbox.restartCodeContext(first);
  execution = await sandbox.runCode("print('secret' in globals())", { context: first });
  check('restart empties a context', execution.logs.stdout.join('') === 'False\n',
        JSON.stringify(execution.logs));
  await sandbox.removeCodeContext(second);
  const after = await sandbox.listCodeContexts();
  check('remove', !after.some((c) => c.id === second.id));

  // A call that outlives timeoutMs is given up; the next call still works.
  let timedOut = false;
  try {
    await sandbox.runCode('import time\ntime.sleep(30)', { timeoutMs: 1000 });
  } catch (e) {
    timedOut = true;
  }
  check('timeoutMs ends the call', timedOut);
  const began = Date.now();
  execution = await sandbox.runCode("print('after the timeout')");
  check('the next call works', execution.logs.stdout.join('') === 'after the timeout\n' &&
        Date.now() - began < 20000, JSON.stringify(execution.logs));
}

main().then(() => {
  console.log(failed === 0 ? 'e2b_client: all passed' : `e2b_client: ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}, (e) => {
  console.log(`FAILED: ${e?.stack ?? e}`);
  process.exit(1);
});
