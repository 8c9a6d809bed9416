// JupyterLab's own client library, @jupyterlab/services, against
// `cellexec serve`: what JupyterLab does when it opens a notebook on a
// Jupyter server.  Usage: node jupyterlab_client.mjs URL TOKEN [--any-framing]
// (--any-framing: the server may not offer the binary subprotocol, as
// Debian's Jupyter Server 1 does not).  Prints one line per check and
// exits 1 if any failed.
import { KernelAPI, KernelManager, KernelSpecManager, ServerConnection } from '@jupyterlab/services';
import WebSocket from 'ws';

const [url, token, framing] = process.argv.slice(2);
let failed = 0;
function check(name, ok, detail = '') {
  console.log(`${ok ? 'ok' : 'FAILED'}: ${name}${ok || !detail ? '' : ` (${detail})`}`);
  if (!ok) failed++;
}

function settings(withToken) {
  return ServerConnection.makeSettings({
    baseUrl: url.endsWith('/') ? url : url + '/',
    wsUrl: url.replace(/^http/, 'ws').replace(/\/?$/, '/'),
    token: withToken,
    appendToken: true,
    WebSocket,
  });
}

// Run CODE; the IOPub messages it brought and its reply.
async function execute(kernel, code) {
  const messages = [];
  const future = kernel.requestExecute({ code });
  future.onIOPub = (msg) => messages.push(msg);
  const reply = await future.done;
  return { messages, reply };
}

const text = (messages, name) => messages
  .filter((m) => m.header.msg_type === 'stream' && m.content.name === name)
  .map((m) => m.content.text).join('');

async function main() {
  const serverSettings = settings(token);
  const specs = new KernelSpecManager({ serverSettings });
  await specs.ready;
  check('kernelspecs list python3', specs.specs?.default === 'python3' &&
        'python3' in (specs.specs?.kernelspecs ?? {}));

  const kernels = new KernelManager({ serverSettings });
  await kernels.ready;
  const kernel = await kernels.startNew({ name: 'python3' });
  check('a kernel starts', !!kernel.id);

  let run = await execute(kernel, "print('hello')\n1 + 1");
  // JupyterLab 4 asks for Jupyter Server's binary framing (its private
  // socket is the only place that says which one the server chose).
  if (framing !== '--any-framing')
    check('binary subprotocol', kernel._ws?.protocol === 'v1.kernel.websocket.jupyter.org',
          String(kernel._ws?.protocol));
  check('stream', text(run.messages, 'stdout') === 'hello\n', JSON.stringify(text(run.messages, 'stdout')));
  const result = run.messages.find((m) => m.header.msg_type === 'execute_result');
  check('execute_result', result?.content.data['text/plain'] === '2');
  check('reply ok', run.reply.content.status === 'ok');

  run = await execute(kernel, "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))");
  const shown = run.messages.find((m) => m.header.msg_type === 'display_data');
  check('display_data', shown?.content.data['text/html'] === '<b>bold</b>');

  run = await execute(kernel, '1 / 0');
  const error = run.messages.find((m) => m.header.msg_type === 'error');
  check('error', error?.content.ename === 'ZeroDivisionError' && run.reply.content.status === 'error');

  await execute(kernel, 'zebra_count = 41');
  const completed = await kernel.requestComplete({ code: 'zebra_c', cursor_pos: 7 });
  check('completion', completed.content.matches.includes('zebra_count'),
        JSON.stringify(completed.content.matches));

  // Interrupt a long cell: KeyboardInterrupt, the state kept.
  const sleeping = kernel.requestExecute({ code: 'import time\ntime.sleep(30)' });
  const errors = [];
  sleeping.onIOPub = (msg) => { if (msg.header.msg_type === 'error') errors.push(msg.content.ename); };
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const began = Date.now();
  await kernel.interrupt();
  const interrupted = await sleeping.done;
  check('interrupt', interrupted.content.status === 'error' && errors.includes('KeyboardInterrupt') &&
        Date.now() - began < 20000, JSON.stringify(errors));
  run = await execute(kernel, 'print(zebra_count)');
  check('state kept after the interrupt', text(run.messages, 'stdout') === '41\n');

  await kernel.restart();
  run = await execute(kernel, "print('zebra_count' in globals())");
  check('restart ends the state', text(run.messages, 'stdout') === 'False\n');

  await kernel.shutdown();
  const left = await KernelAPI.listRunning(serverSettings);
  check('shutdown', !left.some((m) => m.id === kernel.id));
  kernels.dispose();
  specs.dispose();

  // A wrong token is refused, and starts nothing.
  const wrong = new KernelManager({ serverSettings: settings('not-the-token') });
  try {
    await wrong.startNew({ name: 'python3' });
    check('wrong token refused', false, 'a kernel started');
  } catch (e) {
    check('wrong token refused', e?.response?.status === 403, String(e?.response?.status ?? e));
  }
  wrong.dispose();
}

main().then(() => {
  console.log(failed === 0 ? 'jupyterlab_client: all passed' : `jupyterlab_client: ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}, (e) => {
  console.log(`FAILED: ${e?.stack ?? e}`);
  process.exit(1);
});
