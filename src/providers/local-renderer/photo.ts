/** A styled product photo: the product on a studio backdrop with a soft floor shadow. */
import sharp from 'sharp';
import type { PhotoJob, RenderedAsset } from '../provider';
import { requireDecodable } from '../inputs';
import { dimensionsFor, fitted, LONG_SIDE } from './compose';

const BACKDROPS: Record<PhotoJob['photoStyle'], [string, string]> = {
  classic: ['#f7f7f5', '#d9dadc'],
  home: ['#f6e9d7', '#c9a98a'],
};

export async function renderPhoto(job: PhotoJob): Promise<RenderedAsset> {
  const { width, height } = dimensionsFor(job.aspectRatio, LONG_SIDE[job.resolution]);
  // The first photo is the one shown (and decoded as it is fitted); the others are only proven whole, first and in
  // turn, so a render holds one decode at a time within its slot.
  await requireDecodable(job.images.slice(1));
  const product = await fitted(job.images[0], width * 0.72, height * 0.62);
  const [top, bottom] = BACKDROPS[job.photoStyle];
  const shadowY = Math.round(height / 2 + product.height / 2);
  const backdrop = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
      <defs>
        <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="${top}"/><stop offset="1" stop-color="${bottom}"/></linearGradient>
        <filter id="blur"><feGaussianBlur stdDeviation="${Math.round(width / 60)}"/></filter>
      </defs>
      <rect width="100%" height="100%" fill="url(#bg)"/>
      <ellipse cx="${width / 2}" cy="${shadowY}" rx="${Math.round(product.width * 0.45)}" ry="${Math.round(height / 40)}"
        fill="#000" fill-opacity="0.28" filter="url(#blur)"/>
    </svg>`,
  );
  const bytes = await sharp(backdrop).composite([{ input: product.data, gravity: 'centre' }]).jpeg({ quality: 88 }).toBuffer();
  return { bytes, extension: 'jpg' };
}
