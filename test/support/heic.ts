/**
 * Large HEIC images for tests, built without an encoder: a HEIF grid whose every tile is the one HEVC-coded tile of
 * `test/fixtures/sample.heic` (320x320). The file stays a few kilobytes while it decodes to `columns` x `rows` tiles.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const SAMPLE_HEIC = readFileSync(path.resolve(__dirname, '../../../test/fixtures/sample.heic'));

const u16 = (...values: number[]) => Buffer.concat(values.map((v) => { const b = Buffer.alloc(2); b.writeUInt16BE(v); return b; }));
const u32 = (...values: number[]) => Buffer.concat(values.map((v) => { const b = Buffer.alloc(4); b.writeUInt32BE(v); return b; }));

function box(type: string, ...body: Buffer[]): Buffer {
  const content = Buffer.concat(body);
  return Buffer.concat([u32(8 + content.length), Buffer.from(type, 'latin1'), content]);
}

const fullBox = (type: string, version: number, flags: number, ...body: Buffer[]) => box(type, u32((version << 24) | flags), ...body);

/** The child boxes of a box's content, by type. */
function children(content: Buffer): Record<string, Buffer> {
  const found: Record<string, Buffer> = {};
  for (let at = 0; at < content.length; at += content.readUInt32BE(at)) {
    found[content.toString('latin1', at + 4, at + 8)] = content.subarray(at, at + content.readUInt32BE(at));
  }
  return found;
}

export function largeHeic(columns: number, rows: number): Buffer {
  const meta = children(children(SAMPLE_HEIC).meta.subarray(12));
  const properties = children(children(meta.iprp.subarray(8)).ipco.subarray(8));
  // The sample's one item: iloc v0 with 4-byte offset, length and base offset.
  const iloc = meta.iloc;
  const tileAt = iloc.readUInt32BE(20) + iloc.readUInt32BE(26);
  const tile = SAMPLE_HEIC.subarray(tileAt, tileAt + iloc.readUInt32BE(30));
  const [tileWidth, tileHeight] = [properties.ispe.readUInt32BE(12), properties.ispe.readUInt32BE(16)];
  const [width, height] = [columns * tileWidth, rows * tileHeight];

  const tiles = Array.from({ length: columns * rows }, (_, i) => i + 1);
  const gridId = tiles.length + 1;
  const grid = Buffer.concat([Buffer.from([0, 0, rows - 1, columns - 1]), u16(width, height)]);
  const infe = (id: number, type: string, hidden: boolean) => fullBox('infe', 2, hidden ? 1 : 0, u16(id, 0), Buffer.from(`${type}\0`, 'latin1'));
  const metaBox = (dataAt: number) => fullBox('meta', 0, 0,
    fullBox('hdlr', 0, 0, u32(0), Buffer.from('pict', 'latin1'), u32(0, 0, 0), Buffer.from([0])),
    fullBox('pitm', 0, 0, u16(gridId)),
    // Every tile item points at the same bytes; the grid item's bytes follow them.
    fullBox('iloc', 0, 0, Buffer.from([0x44, 0x00]), u16(gridId),
      ...tiles.map((id) => Buffer.concat([u16(id, 0, 1), u32(dataAt, tile.length)])),
      Buffer.concat([u16(gridId, 0, 1), u32(dataAt + tile.length, grid.length)])),
    fullBox('iinf', 0, 0, u16(gridId), ...tiles.map((id) => infe(id, 'hvc1', true)), infe(gridId, 'grid', false)),
    fullBox('iref', 0, 0, box('dimg', u16(gridId, tiles.length, ...tiles))),
    box('iprp',
      box('ipco', properties.hvcC, properties.ispe, properties.pixi, fullBox('ispe', 0, 0, u32(width, height))),
      fullBox('ipma', 0, 0, u32(gridId),
        ...tiles.map((id) => Buffer.concat([u16(id), Buffer.from([2, 0x81, 0x02])])), // hvcC (essential), tile ispe
        Buffer.concat([u16(gridId), Buffer.from([1, 0x04])]))), // grid ispe
  );
  const ftyp = box('ftyp', Buffer.from('heic', 'latin1'), u32(0), Buffer.from('mif1heic', 'latin1'));
  const dataAt = ftyp.length + metaBox(0).length + 8;
  return Buffer.concat([ftyp, metaBox(dataAt), box('mdat', tile, grid)]);
}
