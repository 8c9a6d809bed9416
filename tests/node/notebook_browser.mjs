// What a user of Jupyter Notebook 6 sees, read from the page headless
// Chromium renders (puppeteer-core, Debian's chromium): one notebook per
// kernel named on the command line, each with the same cells, run one by
// one as a user runs them.  Before the first cell the page opens two comms
// to a target no kernel registered, as the widget extension does.
//
//   node notebook_browser.mjs URL TOKEN ROOT KERNEL...
//
// Prints one JSON line per kernel: {"kernel": NAME, "cells": [{"prompt":
// "In [1]:", "out_prompts": [...], "text": ..., "errors": N, "kernel_died":
// BOOL}, ...]}, what the page shows of each cell once it ran, and whether
// the kernel died of it (the page then restarts it for the next cell).  Exits 1 with
// one line on stderr when the page cannot be driven.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const CELLS = [
  "print('before the crash')",
  'import os; os.kill(os.getpid(), 11)',
  "class Unprintable:\n    def __repr__(self):\n        raise ValueError('no repr today')\n\nUnprintable()",
];

const TIMEOUT = 60000;

function notebookFor(kernel) {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: kernel, display_name: kernel, language: 'python' } },
    cells: CELLS.map((source, i) => ({
      cell_type: 'code', id: `cell-${i}`, metadata: {}, source, outputs: [],
      execution_count: null,
    })),
  };
}

// In the page: the kernel is connected and idle.
function kernelIdle() {
  const kernel = window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel;
  return Boolean(kernel && kernel.is_connected() &&
                 document.querySelector('#kernel_indicator_icon.kernel_idle_icon'));
}

// In the page: run cell INDEX, as Shift-Enter does.
function runCell(index) {
  const cell = Jupyter.notebook.get_cell(index);
  Jupyter.notebook.select(index);
  cell.execute();
}

// In the page: what cell INDEX shows.
function cellView(index) {
  const element = Jupyter.notebook.get_cell(index).element[0];
  const text = (node) => (node ? node.innerText.replace(/\u00a0/g, ' ').trim() : '');
  return {
    prompt: text(element.querySelector('.input_prompt')),
    out_prompts: [...element.querySelectorAll('.output_area .output_prompt')]
      .map(text).filter((t) => t !== ''),
    text: text(element.querySelector('.output_wrapper')),
    errors: element.querySelectorAll('.output_error').length,
  };
}

// In the page: cell INDEX ran (its prompt shows no '*' any more: a reply
// came, or the kernel died) and the kernel is idle or dead.
function promptSettled(index) {
  const prompt = Jupyter.notebook.get_cell(index).element[0].querySelector('.input_prompt');
  const kernel = document.querySelector('#kernel_indicator_icon');
  return Boolean(prompt && !prompt.innerText.includes('*') && kernel &&
                 (kernel.classList.contains('kernel_idle_icon') ||
                  kernel.classList.contains('kernel_dead_icon')));
}

// In the page: TRUE when the kernel died and was restarted, as a user does
// with Kernel > Restart (Notebook does not always reconnect to the kernel
// its server restarted).
function restartIfDead() {
  if (!document.querySelector('#kernel_indicator_icon.kernel_dead_icon'))
    return false;
  Jupyter.notebook.kernel.restart();
  return true;
}

// Wait until PREDICATE(...ARGS) holds in PAGE; the error says for WHAT.
async function waitFor(page, what, predicate, ...args) {
  try {
    await page.waitForFunction(predicate, { polling: 100 }, ...args);
  } catch (error) {
    const state = await page.evaluate(() => [...document.querySelectorAll('.input_prompt')]
      .map((p) => p.innerText).join(' ') + ' kernel: ' +
      document.querySelector('#kernel_indicator_icon').className);
    throw new Error(`waiting for ${what} (${state}): ${error.message}`);
  }
}

// Wait (60 s at most) until the Notebook server at BASE answers.
async function serverUp(base, token) {
  const deadline = Date.now() + TIMEOUT;
  for (;;) {
    try {
      if ((await fetch(`${base}/api/status?token=${token}`)).ok)
        return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`the Notebook server at ${base} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function viewOf(browser, base, token, root, kernel) {
  fs.writeFileSync(path.join(root, `${kernel}.ipynb`), JSON.stringify(notebookFor(kernel)));
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  // Notebook asks before leaving a page with a running kernel.
  page.on('dialog', (dialog) => dialog.accept());
  await page.goto(`${base}/notebooks/${kernel}.ipynb?token=${token}`, { waitUntil: 'load' });
  await waitFor(page, `${kernel}: its kernel to start`, kernelIdle);
  await page.evaluate(() => {
    for (let i = 0; i < 2; i++)
      Jupyter.notebook.kernel.comm_manager.new_comm('jupyter.widget', {});
  });
  const cells = [];
  for (let i = 0; i < CELLS.length; i++) {
    await page.evaluate(runCell, i);
    await waitFor(page, `${kernel}: cell ${i} to run`, promptSettled, i);
    const view = await page.evaluate(cellView, i);
    view.kernel_died = await page.evaluate(restartIfDead);
    await waitFor(page, `${kernel}: the kernel after cell ${i}`, kernelIdle);
    cells.push(view);
  }
  await page.close();
  return { kernel, cells };
}

const [base, token, root, ...kernels] = process.argv.slice(2);
if (!base || !token || !root || kernels.length === 0) {
  console.error('usage: node notebook_browser.mjs URL TOKEN ROOT KERNEL...');
  process.exit(2);
}
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cellexec-chromium-'));
let browser;
try {
  await serverUp(base, token);
  browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: false, // the flag below, as given: no download of a headless shell
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           `--user-data-dir=${profile}`],
  });
  for (const kernel of kernels)
    console.log(JSON.stringify(await viewOf(browser, base, token, root, kernel)));
} catch (error) {
  console.error(`notebook_browser: ${error.message.split('\n')[0]}`);
  process.exitCode = 1;
} finally {
  if (browser)
    await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
