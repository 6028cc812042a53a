/**
 * Small WebP thumbnails of image results, for lists (the dashboard's gallery, `thumb_url` in the API): at most
 * THUMBNAIL_SIZE pixels a side, stored beside the result under its own name with `.thumb.webp`.
 */
import sharp from 'sharp';

export const THUMBNAIL_SIZE = 320;

const THUMBNAIL_SUFFIX = '.thumb.webp';
/** Where a result's thumbnail is stored: `results/7/<name>.png` → `results/7/<name>.thumb.webp`. */
export const thumbnailKeyOf = (resultKey: string): string => resultKey.replace(/\.[a-z0-9]+$/, THUMBNAIL_SUFFIX);
/** Whether a stored key (or file name) is a thumbnail rather than a result. */
export const isThumbnailKey = (key: string): boolean => key.endsWith(THUMBNAIL_SUFFIX);

/** The thumbnail of an image (oriented as it is shown, never enlarged). */
export function makeThumbnail(image: Buffer): Promise<Buffer> {
  return sharp(image).rotate().resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true }).webp({ quality: 70 }).toBuffer();
}
