/**
 * Marketing cards. Infographic: a title, up to three text panels with icons and the product, in a palette taken
 * from the design reference (uploaded image, design key or category), loosened by `creativity`. Cinematic: a
 * clean, dramatically lit frame with no text.
 */
import sharp from 'sharp';
import type { CardJob, RenderedAsset } from '../provider';
import { requireDecodable } from '../inputs';
import { dimensionsFor, escapeXml, fitted, hashOf, hex, LONG_SIDE, meanColour, mix, wrap } from './compose';

type Rgb = [number, number, number];

const CATEGORY_PALETTES: Record<string, Rgb> = {
  apparel: [198, 120, 140], wearables: [180, 150, 90], food: [214, 120, 60], cosmetics: [220, 150, 170],
  gadgets: [60, 110, 190], home: [140, 160, 120], other: [110, 120, 140],
};

function hueColour(seed: number): Rgb {
  const h = (seed % 360) / 60;
  const x = Math.round(200 * (1 - Math.abs((h % 2) - 1)));
  const table: Rgb[] = [[200, x, 60], [x, 200, 60], [60, 200, x], [60, x, 200], [x, 60, 200], [200, 60, x]];
  return table[Math.floor(h) % 6];
}

/** The card's accent colour: the reference's, moved towards a free colour by `creativity`. */
async function accentColour(job: CardJob): Promise<Rgb> {
  const reference: Rgb = job.designReference
    ? await meanColour(job.designReference)
    : job.designKey ? hueColour(hashOf(job.designKey)) : CATEGORY_PALETTES[job.categoryId] ?? CATEGORY_PALETTES.other;
  return mix(reference, hueColour(hashOf(job.productName)), job.creativity);
}

function bullets(text: string): string[] {
  return text.split(/[\n.;•]+|,\s+/).map((s) => s.trim()).filter(Boolean).slice(0, 3);
}

export async function renderCard(job: CardJob): Promise<RenderedAsset> {
  const { width, height } = dimensionsFor(job.aspectRatio, LONG_SIDE['2K']);
  // The first photo is the one shown (and decoded as it is fitted); the others are only proven whole.
  await requireDecodable(job.images.slice(1));
  return job.style === 'cinematic' ? renderCinematic(job, width, height) : renderInfographic(job, width, height);
}

async function renderInfographic(job: CardJob, width: number, height: number): Promise<RenderedAsset> {
  const accent = await accentColour(job);
  const light = mix(accent, [255, 255, 255], 0.85);
  const dark = mix(accent, [0, 0, 0], 0.55);
  const unit = Math.min(width, height) / 20;
  const title = wrap(job.productName, Math.max(12, Math.round(width / (unit * 0.9))), 2);
  const points = bullets(job.userText);
  const panelX = width * 0.52;
  const panelW = width * 0.45;
  const panelH = unit * 3.2;
  const firstPanelY = height * 0.3;

  const panels = points.map((point, i) => {
    const y = firstPanelY + i * (panelH + unit * 0.8);
    const lines = wrap(point, Math.max(8, Math.floor((panelW - unit * 3.5) / (unit * 0.5))), 2);
    return `<g>
      <rect x="${panelX}" y="${y}" width="${panelW}" height="${panelH}" rx="${unit * 0.6}" fill="#ffffff" fill-opacity="0.92"/>
      <circle cx="${panelX + unit * 1.5}" cy="${y + panelH / 2}" r="${unit * 0.9}" fill="${hex(accent)}"/>
      <text x="${panelX + unit * 1.5}" y="${y + panelH / 2 + unit * 0.35}" font-family="DejaVu Sans, sans-serif" font-size="${unit}" font-weight="bold" fill="#fff" text-anchor="middle">${i + 1}</text>
      ${lines.map((line, j) => `<text x="${panelX + unit * 3}" y="${y + panelH / 2 + (j - (lines.length - 1) / 2) * unit * 1.1 + unit * 0.3}" font-family="DejaVu Sans, sans-serif" font-size="${unit * 0.8}" fill="${hex(dark)}">${escapeXml(line)}</text>`).join('')}
    </g>`;
  }).join('');

  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="bg" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${hex(light)}"/><stop offset="1" stop-color="${hex(mix(accent, [255, 255, 255], 0.55))}"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#bg)"/>
    <rect x="0" y="0" width="100%" height="${unit * 4.6}" fill="${hex(dark)}"/>
    ${title.map((line, i) => `<text x="${unit}" y="${unit * (1.9 + i * 1.5)}" font-family="DejaVu Sans, sans-serif" font-size="${unit * 1.3}" font-weight="bold" fill="#fff">${escapeXml(line)}</text>`).join('')}
    ${panels}
  </svg>`;
  const product = await fitted(job.images[0], width * 0.5, height * 0.62);
  const bytes = await sharp(Buffer.from(svg))
    .composite([{ input: product.data, left: Math.round(width * 0.04), top: Math.round(height * 0.3) }])
    .jpeg({ quality: 88 }).toBuffer();
  return { bytes, extension: 'jpg' };
}

async function renderCinematic(job: CardJob, width: number, height: number): Promise<RenderedAsset> {
  const tone = mix(CATEGORY_PALETTES[job.categoryId] ?? CATEGORY_PALETTES.other, [0, 0, 0], 0.7);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs>
      <radialGradient id="light" cx="0.5" cy="0.42" r="0.75">
        <stop offset="0" stop-color="${hex(mix(tone, [255, 240, 220], 0.55))}"/>
        <stop offset="0.55" stop-color="${hex(tone)}"/>
        <stop offset="1" stop-color="#050505"/>
      </radialGradient>
      <filter id="blur"><feGaussianBlur stdDeviation="${Math.round(width / 40)}"/></filter>
    </defs>
    <rect width="100%" height="100%" fill="url(#light)"/>
    <ellipse cx="${width / 2}" cy="${height * 0.8}" rx="${width * 0.3}" ry="${height * 0.03}" fill="#000" fill-opacity="0.55" filter="url(#blur)"/>
  </svg>`;
  const product = await fitted(job.images[0], width * 0.66, height * 0.6);
  const bytes = await sharp(Buffer.from(svg))
    .composite([{ input: product.data, left: Math.round((width - product.width) / 2), top: Math.round(height * 0.8 - product.height) }])
    .jpeg({ quality: 90 }).toBuffer();
  return { bytes, extension: 'jpg' };
}
