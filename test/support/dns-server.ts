/**
 * A DNS server of the test suite (UDP on loopback) whose A answers a test scripts per name and per query, so a name
 * can answer one address when it is checked and another when it is connected to (DNS rebinding). AAAA queries get
 * no answer; every answer has TTL 0, so nothing may keep it. `resolveHost` is an outbound policy's resolver pointed
 * at this server alone.
 */
import dgram from 'node:dgram';
import { promises as dns } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { AddressInfo } from 'node:net';
import * as packet from 'dns-packet';

export interface TestDnsServer {
  /** The IPv4 addresses to answer for `name`, one list per query in turn; the last list repeats. */
  script(name: string, ...answers: string[][]): void;
  /** How many A queries `name` got. */
  queries(name: string): number;
  /** A resolver for `OutboundPolicy` that asks this server only (A and AAAA, like the system's resolver). */
  resolveHost(hostname: string): Promise<LookupAddress[]>;
  close(): Promise<void>;
}

export async function startDnsServer(): Promise<TestDnsServer> {
  const scripts = new Map<string, string[][]>();
  const counts = new Map<string, number>();
  const socket = dgram.createSocket('udp4');
  socket.on('message', (message, peer) => {
    const query = packet.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    let answers: packet.Answer[] = [];
    if (question.type === 'A') {
      const seen = counts.get(name) ?? 0;
      counts.set(name, seen + 1);
      const script = scripts.get(name) ?? [];
      const addresses = script[Math.min(seen, script.length - 1)] ?? [];
      answers = addresses.map((data) => ({ type: 'A', class: 'IN', name: question.name, ttl: 0, data }));
    }
    const known = scripts.has(name);
    const reply = packet.encode({
      type: 'response', id: query.id, flags: packet.AUTHORITATIVE_ANSWER | (known ? 0 : 3), // rcode 3: NXDOMAIN
      questions: [question], answers,
    });
    socket.send(reply, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const resolver = new dns.Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([`127.0.0.1:${(socket.address() as AddressInfo).port}`]);
  const none = (err: NodeJS.ErrnoException): string[] => {
    if (err.code === 'ENODATA') return [];
    throw err;
  };

  return {
    script: (name, ...answers) => void scripts.set(name.toLowerCase(), answers),
    queries: (name) => counts.get(name.toLowerCase()) ?? 0,
    async resolveHost(hostname) {
      const [v4, v6] = await Promise.all([resolver.resolve4(hostname).catch(none), resolver.resolve6(hostname).catch(none)]);
      return [...v4.map((address) => ({ address, family: 4 })), ...v6.map((address) => ({ address, family: 6 }))];
    },
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
