import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker } from '../src/webhooks/circuit-breaker.js';
import { isForbiddenAddress } from '../src/webhooks/ssrf.js';

describe('CircuitBreaker (per destination host)', () => {
  it('pauses a host after N consecutive failures and resumes only after a successful probe', () => {
    const breaker = new CircuitBreaker({ threshold: 3, cooldownMs: 1000 });
    for (let i = 0; i < 2; i++) breaker.failure('a:1', 0);
    assert.deepEqual(breaker.check('a:1', 0), { allowed: true, probe: false });
    breaker.failure('a:1', 0);
    assert.deepEqual(breaker.check('a:1', 500), { allowed: false, retryAt: 1000 });
    assert.deepEqual(breaker.check('b:1', 500), { allowed: true, probe: false }, 'other hosts are not affected');
    assert.deepEqual(breaker.check('a:1', 1000), { allowed: true, probe: true });
    assert.equal(breaker.check('a:1', 1000).allowed, false, 'one probe at a time');
    breaker.failure('a:1', 1000);
    assert.deepEqual(breaker.check('a:1', 2500), { allowed: false, retryAt: 3000 }, 'a failed probe pauses twice as long');
    assert.equal(breaker.check('a:1', 3000).allowed, true);
    breaker.success('a:1');
    assert.deepEqual(breaker.check('a:1', 3000), { allowed: true, probe: false });
    assert.deepEqual(breaker.openHosts(3000), []);
  });

  it('a success resets the consecutive failure count', () => {
    const breaker = new CircuitBreaker({ threshold: 2 });
    breaker.failure('h', 0);
    breaker.success('h');
    breaker.failure('h', 0);
    assert.equal(breaker.check('h', 0).allowed, true);
  });
});

describe('SSRF address policy', () => {
  it('forbids private, loopback, link-local and mapped addresses, allows public ones', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isForbiddenAddress(address), false, address);
  });
});
