/**
 * Images of the kinds a product photo rarely is, made with sharp in the test rather than kept as binary files:
 * animated GIF, WebP and PNG, a WebP whose frames add up to gigapixels, and the colour readings to check them.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { resolveFfmpeg } from '../../src/media/ffmpeg';

/** `[r, g, b]` of 0-255. */
export type Rgb = [number, number, number];

/** A tall raw image of one solid page per colour, `pageHeight` set, so that sharp writes it as an animation. */
function pagesOf(colours: Rgb[], width: number, height: number): sharp.Sharp {
  const page = width * height * 3;
  const raw = Buffer.alloc(page * colours.length);
  colours.forEach((colour, i) => raw.fill(Buffer.from(colour), i * page, (i + 1) * page));
  return sharp(raw, { raw: { width, height: height * colours.length, channels: 3, pageHeight: height } });
}

/** An animated GIF or WebP of one frame per colour (the frames differ: encoders merge equal neighbours). */
export async function animated(format: 'gif' | 'webp', colours: Rgb[], width = 320, height = 400): Promise<Buffer> {
  const pages = pagesOf(colours, width, height);
  return format === 'gif' ? pages.gif().toBuffer() : pages.webp({ lossless: true }).toBuffer();
}

interface Chunk { type: string; bytes: Buffer }

/** The chunks of a RIFF WebP, each with its header (and padding). */
function webpChunks(webp: Buffer): Chunk[] {
  const chunks: Chunk[] = [];
  for (let at = 12; at + 8 <= webp.length;) {
    const size = webp.readUInt32LE(at + 4);
    const end = at + 8 + size + (size & 1);
    chunks.push({ type: webp.toString('latin1', at, at + 4), bytes: webp.subarray(at, end) });
    at = end;
  }
  return chunks;
}

/**
 * A small animated WebP whose frames together are huge: sharp encodes two solid `side`x`side` frames (lossless, a
 * few dozen bytes each), and their ANMF chunks are repeated `frames` times. Every frame is within the size caps;
 * all of them decoded would be `frames` x `side`² pixels.
 */
export async function manyFrameWebp(frames: number, side: number): Promise<Buffer> {
  const two = webpChunks(await pagesOf([[200, 40, 30], [30, 40, 200]], side, side).webp({ lossless: true, effort: 0 }).toBuffer());
  const [first, second] = two.filter((c) => c.type === 'ANMF');
  const body = [...two.filter((c) => c.type !== 'ANMF').map((c) => c.bytes), ...Array.from({ length: frames }, (_, i) => (i % 2 ? second : first).bytes)];
  const file = Buffer.concat([Buffer.from('RIFF\0\0\0\0WEBP', 'latin1'), ...body]);
  file.writeUInt32LE(file.length - 8, 4);
  return file;
}

function pngChunks(png: Buffer): Chunk[] {
  const chunks: Chunk[] = [];
  for (let at = 8; at + 12 <= png.length;) {
    const end = at + 12 + png.readUInt32BE(at);
    chunks.push({ type: png.toString('latin1', at + 4, at + 8), bytes: png.subarray(at, end) });
    at = end;
  }
  return chunks;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData));
  return Buffer.concat([length, typeAndData, crc]);
}

/**
 * An APNG of two frames (its default image is the first): the PNG of the first colour with `acTL` and `fcTL` in
 * front of its IDAT, then the second colour's image data as an `fdAT` frame. Sharp reads only the default image.
 */
export async function animatedPng(first: Rgb, second: Rgb, width = 320, height = 400): Promise<Buffer> {
  const still = (colour: Rgb) => sharp({ create: { width, height, channels: 3, background: { r: colour[0], g: colour[1], b: colour[2] } } }).png().toBuffer();
  const [a, b] = [pngChunks(await still(first)), pngChunks(await still(second))];
  const frameControl = (sequence: number) => {
    const data = Buffer.alloc(26);
    data.writeUInt32BE(sequence, 0);
    data.writeUInt32BE(width, 4);
    data.writeUInt32BE(height, 8);
    data.writeUInt16BE(1, 20); // delay 1/10 s
    data.writeUInt16BE(10, 22);
    return pngChunk('fcTL', data);
  };
  const animationControl = Buffer.alloc(8);
  animationControl.writeUInt32BE(2, 0); // two frames, looped forever
  const idat = (chunks: Chunk[]) => Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.bytes.subarray(8, -4)));
  const sequence = Buffer.alloc(4);
  sequence.writeUInt32BE(2);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    a.find((c) => c.type === 'IHDR')!.bytes,
    pngChunk('acTL', animationControl),
    frameControl(0),
    ...a.filter((c) => c.type === 'IDAT').map((c) => c.bytes),
    frameControl(1),
    pngChunk('fdAT', Buffer.concat([sequence, idat(b)])),
    a.find((c) => c.type === 'IEND')!.bytes,
  ]);
}

/** The distinct frames of an APNG as ffmpeg's APNG demuxer decodes them (one MD5 each), to prove a fixture animates. */
export async function apngFrameHashes(apng: Buffer): Promise<string[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'apng-'));
  try {
    const file = path.join(dir, 'a.png'); // the APNG demuxer seeks: no pipe
    await writeFile(file, apng);
    const ffmpeg = resolveFfmpeg(process.env.FFMPEG_PATH);
    const { stdout } = await promisify(execFile)(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'apng', '-i', file, '-f', 'framemd5', 'pipe:1']);
    return [...new Set(stdout.split('\n').filter((line) => /^\d/.test(line)).map((line) => line.split(',').at(-1)!.trim()))];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The mean colour of an image as a browser shows it: converted to 8-bit sRGB, alpha left out, grey as three equal channels. */
export async function meanSrgb(bytes: Buffer): Promise<Rgb> {
  const { data, info } = await sharp(bytes).toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const sums = [0, 0, 0];
  for (let i = 0; i < data.length; i += info.channels) for (let c = 0; c < 3; c++) sums[c] += data[i + c];
  return sums.map((s) => Math.round(s / (data.length / info.channels))) as Rgb;
}

/** The colour of the pixel at the centre of an image, in 8-bit sRGB. */
export async function centreSrgb(bytes: Buffer): Promise<Rgb> {
  const { width = 1, height = 1 } = await sharp(bytes).metadata();
  const { data } = await sharp(bytes).extract({ left: Math.floor(width / 2), top: Math.floor(height / 2), width: 1, height: 1 })
    .toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return [data[0], data[1], data[2]];
}

/** Whether each channel is within `tolerance` of the expected colour. */
export function near(actual: Rgb, expected: Rgb, tolerance = 16): boolean {
  return actual.every((v, i) => Math.abs(v - expected[i]) <= tolerance);
}
