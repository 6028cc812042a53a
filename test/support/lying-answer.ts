/**
 * A 200 answer whose Content-Length lies, written by hand on the socket (Node's own server refuses to send a body
 * that disagrees with its Content-Length): `body` under a declared length of `declared`, then `then`:
 * `endless` keeps sending bytes past it until the connection closes, `close` ends the connection, `stall` sends
 * nothing more and leaves the connection open.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface LyingAnswer {
  declared: number;
  body: Buffer;
  then: 'endless' | 'close' | 'stall';
  contentType?: string;
}

export function sendLyingAnswer(res: ServerResponse, answer: LyingAnswer): void {
  const socket = res.socket as Socket;
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${answer.contentType ?? 'application/octet-stream'}\r\nContent-Length: ${answer.declared}\r\n\r\n`);
  socket.write(answer.body);
  if (answer.then === 'close') return void socket.end();
  if (answer.then === 'endless') {
    const excess = Buffer.alloc(16 * 1024, 'b');
    const pump = () => {
      while (!socket.destroyed && socket.write(excess));
    };
    socket.on('drain', pump);
    pump();
  }
}
