import assert from 'node:assert/strict';
import { OutboundPolicy } from '../../src/net/outbound';

describe('outbound address ranges', () => {
  const policy = new OutboundPolicy();

  it('refuses every internal IPv4 and IPv6 range, including the forms that embed an IPv4 address', () => {
    const refused = [
      '0.0.0.0', '10.0.0.1', '100.64.0.1', '127.0.0.1', '169.254.169.254', '172.31.255.255', '192.0.0.8', '192.0.2.1',
      '192.88.99.1', '192.168.0.1', '198.18.0.1', '198.51.100.1', '203.0.113.1', '224.0.0.1', '240.0.0.1', '255.255.255.255',
      '::', '::1', // unspecified, loopback
      '::7f00:1', '::a00:1', '::a9fe:a9fe', // IPv4-compatible ::127.0.0.1, ::10.0.0.1, ::169.254.169.254
      '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:a9fe:a9fe', // IPv4-mapped internal addresses, either notation
      '::ffff:0:7f00:1', // IPv4-translated
      '64:ff9b::7f00:1', '64:ff9b:1::a00:1', // NAT64, well-known and local-use
      '100::1', '100:0:0:1::1', // discard-only, dummy
      '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:2::1', '2001:db8::1', '3fff::1', // IETF, Teredo, benchmarking, documentation
      '2002:7f00:1::1', '2002:c000:0204::1', // 6to4
      '5f00::1', // segment routing
      'fc00::1', 'fd12:3456::1', 'fe80::1', 'febf::1', 'fec0::1', 'feff::1', 'ff02::1', // ULA, link-local, site-local, multicast
    ];
    for (const ip of refused) assert.equal(policy.permits(ip), false, `${ip} must be refused`);
  });

  it('permits public addresses, IPv4-mapped public ones too', () => {
    for (const ip of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '::ffff:808:808']) {
      assert.equal(policy.permits(ip), true, `${ip} must be permitted`);
    }
  });

  it('refuses URLs with an internal literal address in any IPv6 notation', () => {
    for (const url of ['https://[::127.0.0.1]/', 'https://[::ffff:127.0.0.1]/', 'https://[::ffff:0:127.0.0.1]/', 'https://[2002:7f00:1::1]/',
      'https://[64:ff9b:1::10.0.0.1]/', 'https://[fec0::1]/', 'https://0x7f000001/', 'https://127.1/']) {
      assert.throws(() => policy.checkUrl(url), /private or local/, url);
    }
  });
});
