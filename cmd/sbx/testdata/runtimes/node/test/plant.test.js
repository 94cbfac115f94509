'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const net = require('node:net');
const { spawnSync } = require('node:child_process');

test('arithmetic', () => {
  assert.strictEqual(1 + 1, 2);
});

// proxyGet asks the HTTP proxy in HTTP_PROXY for url and resolves to the
// status code of its answer.
function proxyGet(url) {
  const proxy = new URL(process.env.HTTP_PROXY);
  return new Promise((resolve, reject) => {
    const c = net.connect(Number(proxy.port), proxy.hostname, () => {
      c.write(`GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: close\r\n\r\n`);
    });
    let got = '';
    c.on('data', (d) => { got += d; });
    c.on('end', () => resolve(Number(got.split(' ')[1])));
    c.on('error', reject);
  });
}

test('planted refusal', async () => {
  switch (process.env.SBX_PLANT || '') {
    case 'read':
      assert.throws(() => fs.readFileSync(process.env.SBX_PLANT_PATH));
      break;
    case 'net':
      assert.strictEqual(await proxyGet(process.env.SBX_PLANT_URL), 403);
      break;
    case 'unshare': {
      const r = spawnSync('/usr/bin/unshare', ['--user', 'true']);
      assert.notStrictEqual(r.status, 0);
      break;
    }
  }
});
